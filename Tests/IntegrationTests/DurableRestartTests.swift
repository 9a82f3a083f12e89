import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing

/// The durable store across restarts, in process over real TLS: what a stop leaves stored is resent by the
/// next start with the same state directory, in accept order; a time_to_live that ran out meanwhile ends
/// `expired`; feeding the same input again is answered as duplicates, never sent twice.
@Suite(.serialized) struct DurableRestartTests {
    static func stateDirectory() -> String { NSTemporaryDirectory() + "ccsd-e2e-state-\(UUID().uuidString)" }

    /// SIGTERM with the durable store: no SHUTDOWN nacks; the restart sends everything not final, in accept
    /// order (one connection, window 1: the acks come in send order), each acked once across the runs.
    @Test func sigtermKeepsWhatIsNotFinalAndTheRestartResendsItInAcceptOrder() async throws {
        let state = Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let first = try DaemonRun(exitWhenDone: false, stateDirectory: state,
                                  // No ack before the SIGTERM, however late a loaded machine runs the wait below.
                                  emulator: { $0.ackLatencyMilliseconds = 600_000 },
                                  daemon: { $0.shutdownGraceSeconds = 0.3; $0.window = 1; $0.connections = 1 })
        defer { first.stop(); first.cleanUp() }
        first.send(DaemonRun.messages(30, prefix: "k"))
        await waitUntil("all accepted, one in flight", timeout: 20) {
            first.events("accepted").count == 30 && first.emulator.stats().downstreamReceived == 1
        }
        let daemon = first.daemon
        first.loop.execute { daemon.signal(.terminate) }
        await waitUntil("ccsd exits", timeout: 20) { first.exited != nil }
        #expect(first.exited == 0)
        #expect(first.events("nacked").isEmpty)
        #expect(first.finalCounts.isEmpty)
        let accepted = first.events("accepted").compactMap { $0["message_id"]?.stringValue }
        #expect(accepted == (0..<30).map { "k-\($0)" })
        // Every event line carries seq (increasing) and time.
        let seqs = first.events.compactMap { $0["seq"]?.intValue }
        #expect(seqs.count == first.events.count && seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        #expect(first.events.allSatisfy { ($0["time"]?.stringValue ?? "").hasSuffix("Z") })

        let second = try DaemonRun(stateDirectory: state, daemon: { $0.window = 1; $0.connections = 1 })
        defer { second.stop(); second.cleanUp() }
        second.endInput()
        await waitUntil("the restart finished what was stored", timeout: 30) { second.exited != nil }
        #expect(second.exited == 0)
        #expect(second.events("acked").compactMap { $0["message_id"]?.stringValue } == accepted)
        #expect(second.finalCounts.values.allSatisfy { $0 == 1 })
        #expect(second.events("accepted").isEmpty)
        // The journal's seq goes on from where the first run left it.
        let firstLast = seqs.max() ?? 0
        #expect(second.events.compactMap { $0["seq"]?.intValue }.allSatisfy { $0 > firstLast })
    }

    /// A message whose time_to_live ran out while ccsd was down ends `expired` at the restart, never sent;
    /// the same input fed again is refused as duplicates (live ones plainly, final ones with their outcome).
    @Test func expiredWhileDownEndsExpiredAndTheSameInputAgainIsAnsweredAsDuplicates() async throws {
        let state = Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        // time_to_live 5 s: long enough for the first run to log in and send "short" on a loaded machine, so
        // that it is in flight (not expired) when the first run stops.
        let lines = [#"{"to":"tok-short-APA91b","message_id":"short","data":{"n":"1"},"time_to_live":5}"#]
            + DaemonRun.messages(5, prefix: "d")
        let first = try DaemonRun(exitWhenDone: false, stateDirectory: state,
                                  emulator: { $0.ackLatencyMilliseconds = 30_000 },
                                  daemon: { $0.shutdownGraceSeconds = 0.2; $0.window = 1; $0.connections = 1 })
        defer { first.stop(); first.cleanUp() }
        first.send(lines)
        await waitUntil("all accepted", timeout: 20) { first.events("accepted").count == 6 }
        let acceptedBy = ContinuousClock.now  // no earlier than "short"'s acceptance
        // "short" goes first (window 1, accept order) and stays in flight (the emulator acks after 30 s).
        await waitUntil("short in flight", timeout: 20) { first.emulator.stats().downstreamReceived == 1 }
        #expect(first.events("expired").isEmpty)
        let daemon = first.daemon
        first.loop.execute { daemon.signal(.terminate) }
        await waitUntil("ccsd exits", timeout: 20) { first.exited != nil }
        #expect(first.exited == 0)
        // "short" runs out while ccsd is down.
        try await Task.sleep(until: acceptedBy + .milliseconds(5500), clock: .continuous)

        let second = try DaemonRun(stateDirectory: state)
        defer { second.stop(); second.cleanUp() }
        await waitUntil("the kept messages are final", timeout: 30) { second.finalCounts.count == 6 }
        #expect(second.events("expired").compactMap { $0["message_id"]?.stringValue } == ["short"])
        #expect(second.events("acked").count == 5)
        // "short" was in flight in the first run (window 1, accept order) but never again.
        #expect(second.emulator.stats().downstreamReceived == 5)
        // The same input again: every line is final now, so each is refused with its stored outcome.
        second.send(lines)
        second.endInput()
        await waitUntil("ccsd exits", timeout: 20) { second.exited != nil }
        #expect(second.exited == 0)
        let rejected = second.events("rejected")
        #expect(rejected.count == 6)
        #expect(rejected.allSatisfy { $0["field"] == .string("message_id") && $0["outcome"] != nil })
        #expect(second.emulator.stats().downstreamReceived == 5)
        #expect(second.finalCounts.values.allSatisfy { $0 == 1 })
    }

    /// `--exit-when-done` waits for every stored message, not only the ones of this run's input.
    @Test func exitWhenDoneWaitsForEveryStoredMessage() async throws {
        let state = Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let first = try DaemonRun(exitWhenDone: false, stateDirectory: state,
                                  emulator: { $0.ackLatencyMilliseconds = 30_000 },
                                  daemon: { $0.shutdownGraceSeconds = 0.2 })
        defer { first.stop(); first.cleanUp() }
        first.send(DaemonRun.messages(10, prefix: "w"))
        await waitUntil("all accepted", timeout: 20) { first.events("accepted").count == 10 }
        let daemon = first.daemon
        first.loop.execute { daemon.signal(.terminate) }
        await waitUntil("ccsd exits", timeout: 20) { first.exited != nil }

        let second = try DaemonRun(stateDirectory: state, emulator: { $0.ackLatencyMilliseconds = 500 })
        defer { second.stop(); second.cleanUp() }
        second.endInput()  // nothing new: only the stored ten
        try await Task.sleep(for: .milliseconds(200))
        #expect(second.exited == nil, "exited before the stored messages were final")
        await waitUntil("ccsd exits", timeout: 30) { second.exited != nil }
        #expect(second.exited == 0)
        #expect(second.finalCounts.count == 10)
    }
}

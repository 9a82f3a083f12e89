import CCS
import CCSEmulator
import Daemon
import Foundation
import Synchronization
import Testing
import TLS

/// ccsd against a misbehaving server or a failing input/output, over real TLS on loopback. The first three
/// reproduce bugs found by the break-it pass (each failed before its fix); the others pin behaviour that held up.
@Suite(.serialized) struct HostileServerTests {
    // MARK: Regressions

    /// (Fixed by the ack timeout: the silent connection is dropped, and messages past their time_to_live
    /// then end expired instead of being resent.)
    /// A server that is alive (answers pings, keeps the stream open) but never acks:
    /// messages in flight are never resent and never expire, whatever their time_to_live, so they never get
    /// a final event and `--exit-when-done` never exits. The window stays full forever.
    /// Cause: `Dispatcher.tick` drops the `.expiry` timer of an in-flight message ("the ack or nack decides",
    /// Sources/CCS/Dispatch/Dispatcher.swift:228) and nothing bounds the wait for an ack.
    @Test func serverThatNeverAcksStillEndsEveryMessageByItsTimeToLive() async throws {
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 600_000 },
                                daemon: { $0.connections = 1; $0.keepaliveSeconds = 1; $0.deadPeerSeconds = 3; $0.ackTimeoutSeconds = 3 })
        defer { run.stop(); run.cleanUp() }
        let lines = (0..<5).map { #"{"to":"tok-\#($0)-APA91b","message_id":"na-\#($0)","data":{"n":"1"},"time_to_live":2}"# }
        run.send(lines)
        run.endInput()
        await waitUntil("5 messages in flight") { run.emulator.stats().downstreamReceived >= 5 }
        // time_to_live is 2 s: well before 15 s every message must be final (expired, or nacked final).
        await waitUntil("ccsd done", timeout: 15) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.finalCounts.count == 5, "messages without a final event: \(5 - run.finalCounts.count)")
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
    }

    /// An upstream message whose `upstream` event cannot be written (a closed pipe, a full disk) must not
    /// be ACKed: CCS would never redeliver it. ccsd stops (exit 4) instead. Before the fix it ACKed anyway
    /// and exited 0.
    @Test func upstreamIsNotAckedWhenItsEventCannotBeWritten() async throws {
        signal(SIGPIPE, SIG_IGN)
        let fifo = NSTemporaryDirectory() + "ccsd-events-\(UUID().uuidString)"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        let run = try DaemonRun(exitWhenDone: false, eventsPath: fifo)
        defer { run.stop(); run.cleanUp() }
        await waitUntil("logged in") { run.emulator.connectionInfos().contains { $0.phase == "ready" } }
        // The reader goes away: from now on every event write fails with EPIPE.
        close(reader)
        _ = try run.emulator.sendUpstream(count: 1)
        await waitUntil("ccsd stops", timeout: 10) { run.exited != nil }
        #expect(run.exited == 4)
        #expect(run.emulator.stats().upstreamSent == 1)
        #expect(run.emulator.stats().upstreamAcked == 0,
                "ccsd ACKed an upstream message it could not hand over: CCS will not redeliver it")
    }

    /// A read error on the input (here EISDIR) is taken as a normal end of input:
    /// ccsd logs "input ended" and, with --exit-when-done, exits 0 as if every message had been read.
    /// Cause: `IntakeReader.run` breaks out of the read loop on any error but EINTR
    /// (Sources/Daemon/Intake/IntakeReader.swift:80-83) and reports `inputFinished()`.
    @Test func inputReadErrorIsNotACleanEnd() async throws {
        let run = try DaemonRun(inputPath: NSTemporaryDirectory())
        defer { run.stop(); run.cleanUp() }
        await waitUntil("ccsd exited", timeout: 10) { run.exited != nil }
        #expect(run.exited != nil && run.exited != 0, "an unreadable input ended with exit \(String(describing: run.exited))")
    }

    // MARK: Held up (robustness pins)

    /// Every stream error condition from the server mid-load: reconnect, resend, each message final once,
    /// no flow-control violation.
    @Test func streamErrorsOfEveryConditionMidLoadLoseNothing() async throws {
        // Back-to-back stream errors on young connections back off (ReconnectPolicy); this test is about
        // nothing being lost, so the backoff is short here (up to 60 s by default).
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 300 },
                                daemon: { $0.connections = 2; $0.reconnectBackoff.base = 0.05; $0.reconnectBackoff.cap = 0.4 })
        defer { run.stop(); run.cleanUp() }
        let conditions = ["bad-format", "conflict", "connection-timeout", "host-gone", "internal-server-error",
                          "invalid-xml", "not-authorized", "policy-violation", "reset", "see-other-host",
                          "system-shutdown", "undefined-condition", "made-up-condition"]
        // Input stays open until every condition was sent, so the stream errors land mid-load.
        for (index, condition) in conditions.enumerated() {
            let batch = DaemonRun.messages(300, prefix: "se\(index)")
            run.send(batch)
            await waitUntil("messages in flight") {
                run.emulator.connectionInfos().contains { $0.phase == "ready" && $0.unacked > 0 }
            }
            _ = try? run.emulator.sendStreamError(condition: condition, text: "boom")
        }
        run.endInput()
        await waitUntil("ccsd done", timeout: 60) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.finalCounts.count == 300 * conditions.count)
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
        let stats = run.emulator.stats()
        #expect(stats.flowControlViolations == 0)
        #expect(stats.duplicateMessageIDs == 0)
    }

    /// message_ids with XML and JSON specials round-trip through the wire and come back acked.
    @Test func messageIDsWithMarkupCharactersAreAcked() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        let ids = (0..<10).map { #"x<&"'>]]>é\u2028-\#($0)"# }
        run.send(ids.map { id in
            #"{"to":"tok-APA91b","message_id":\#(JSONValue.string(id).serialized()),"data":{"a":"</gcm></message>"}}"#
        })
        run.endInput()
        await waitUntil("ccsd done", timeout: 20) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(Set(run.events("acked").compactMap { $0["message_id"]?.stringValue }) == Set(ids))
    }
}

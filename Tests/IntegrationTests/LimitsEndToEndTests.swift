import CCS
import Daemon
import Foundation
import Testing

/// The producer-side limits end to end (docs/limits.md): `max_line_bytes` and `max_queued`, with the real
/// daemon, intake reader and events file against the emulator on loopback.
@Suite struct LimitsEndToEndTests {
    /// A line longer than `max_line_bytes` is rejected naming the limit and its value; the lines around it
    /// (one exactly at the limit) flow on.
    @Test func aLineOverMaxLineBytesIsRejectedNamingTheLimit() async throws {
        let run = try DaemonRun(store: .memory, daemon: { $0.maxLineBytes = 1024 })
        defer { run.stop(); run.cleanUp() }
        func line(_ id: String, bytes: Int) -> String {
            let head = #"{"to":"tok-1","message_id":"\#(id)","data":{"p":""#
            let tail = #""}}"#
            return head + String(repeating: "x", count: bytes - head.utf8.count - tail.utf8.count) + tail
        }
        run.send([line("at-limit", bytes: 1024), line("over-limit", bytes: 1025), line("after", bytes: 200)])
        run.endInput()
        #expect(await waitUntil("ccsd done", timeout: 30) { run.exited != nil })
        let rejected = run.events("rejected")
        #expect(rejected.count == 1)
        #expect(rejected.first?["line"] == .int(2))
        #expect(rejected.first?["error"]?.stringValue?.contains("longer than 1024 bytes (max_line_bytes)") == true)
        #expect(Set(run.events("acked").compactMap { $0["message_id"]?.stringValue }) == ["at-limit", "after"])
    }

    /// Above `max_queued` outstanding messages intake stops reading until they fall to half: a line written
    /// while 40 messages wait for their (slow) acks is accepted only after at least 35 of them were acked.
    @Test func intakePausesAboveMaxQueued() async throws {
        let run = try DaemonRun(store: .memory, emulator: { $0.ackLatencyMilliseconds = 1500 }, daemon: { $0.maxQueued = 10 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(40, prefix: "q"))
        #expect(await waitUntil("40 accepted", timeout: 30) { run.events("accepted").count == 40 })
        run.send(DaemonRun.messages(1, prefix: "late"))
        run.endInput()
        #expect(await waitUntil("ccsd done", timeout: 30) { run.exited != nil })
        let order = run.events.compactMap { event -> String? in
            guard let name = event["event"]?.stringValue, let id = event["message_id"]?.stringValue else { return nil }
            return "\(name) \(id)"
        }
        let lateAccepted = try #require(order.firstIndex(of: "accepted late-0"))
        let ackedBefore = order[..<lateAccepted].filter { $0.hasPrefix("acked q-") }.count
        #expect(ackedBefore >= 35, "the late line was accepted with \(40 - ackedBefore) messages outstanding")
        #expect(run.finalCounts.count == 41)
    }
}

import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing

/// No poison messages (issue 7 item 4), over real TLS against the emulator's poison-upstream fault mode:
/// upstream messages and a receipt ccsd cannot fully decode are handed over once and ACKed, so the server
/// stops redelivering them.
@Suite(.serialized) struct PoisonUpstreamTests {
    @Test func undecodableUpstreamAndReceiptsAreHandedOverOnceAndAcked() async throws {
        let run = try DaemonRun(exitWhenDone: false, emulator: { $0.poisonUpstream = true })
        defer { run.stop(); run.cleanUp() }
        let ids = CCSEmulator.poisonUpstreamPayloads.map(\.messageID)
        await waitUntil("every poison message ACKed", timeout: 20) { run.emulator.stats().upstreamAcked == ids.count }

        // Handed over once each, with U+FFFD for lone surrogates and decode_error where decoding failed.
        let upstream = Dictionary(grouping: run.events("upstream"), by: { $0["message_id"]?.stringValue ?? "" })
        let receipts = run.events("receipt").filter { $0["message_id"] == .string("dr2:poison-receipt") }
        for id in ids where id != "dr2:poison-receipt" { #expect(upstream[id]?.count == 1, "\(id)") }
        #expect(receipts.count == 1)
        #expect(upstream["poison-high"]?.first?["data"]?["text"] == .string("lone high \u{FFFD} here"))
        #expect(upstream["poison-low"]?.first?["data"]?["text"] == .string("lone low \u{FFFD}, reversed \u{FFFD}\u{FFFD}, pair 😀"))
        #expect(upstream["poison-high"]?.first?["decode_error"] == nil)
        #expect(receipts.first?["device_registration_id"] == .string("tok\u{FFFD}"))
        let number = try #require(upstream["poison-number"]?.first)
        #expect(number["data"] == .object(["n": .null, "text": .string("big")]))
        #expect(number["decode_error"]?.stringValue?.contains("data.n") == true)
        let broken = try #require(upstream["poison-broken"]?.first)
        #expect(broken["from"] == .string("device-poison-4"))
        #expect(broken["data"] == .null)
        #expect(broken["decode_error"]?.stringValue?.contains("not valid JSON") == true)
        #expect(broken["raw"]?.stringValue == CCSEmulator.poisonUpstreamPayloads.last?.json)
        // The receipt's ACK went to its from, like any receipt; each ACK once.
        #expect(run.emulator.clientAcks().map(\.messageID).sorted() == ids.sorted())

        // A reconnect redelivers nothing: every one was ACKed (the emulator redelivers what was not).
        let before = run.emulator.stats()
        _ = try run.emulator.disconnect()
        await waitUntil("ccsd logged in again", timeout: 20) {
            run.emulator.stats().authenticated > before.authenticated && run.emulator.connectionInfos().contains { $0.phase == "ready" }
        }
        let after = run.emulator.stats()
        #expect(after.upstreamRedelivered == 0)
        #expect(after.upstreamAcked == ids.count)
        #expect(run.events("upstream").count == ids.count - 1)
    }
}

/// Intake of lines Foundation refuses or bends (issue 7 items 4 and 7), through the real reader.
@Suite(.serialized) struct IntakeRefusedTextTests {
    @Test func linesAreAcceptedWithReplacementCharactersOrRejectedNamingTheField() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        run.send([
            #"{"to":"tok-1","message_id":"lone-1","data":{"text":"a\ud83d b"}}"#,
            #"{"to":"tok-1","message_id":"big-ttl","time_to_live":1e400,"data":{"a":"b"}}"#,
            #"{"to":"tok-1","message_id":"wrapped-ttl","time_to_live":9223372036854775808,"data":{"a":"b"}}"#,
            #"{"to":"topics/news","message_id":"no-prefix","data":{"a":"b"}}"#,
            #"{"to":"tok-1","message_id":"cut","data":{"a":"b""#,
        ])
        run.endInput()
        await waitUntil("ccsd done", timeout: 30) { run.exited != nil }
        #expect(run.events("acked").compactMap { $0["message_id"]?.stringValue } == ["lone-1"])
        let rejected = Dictionary(uniqueKeysWithValues: run.events("rejected").compactMap { event in
            event["message_id"]?.stringValue.map { ($0, event) }
        })
        #expect(rejected["big-ttl"]?["field"] == .string("time_to_live"))
        #expect(rejected["big-ttl"]?["error"]?.stringValue?.hasSuffix("(got 1e400)") == true)
        #expect(rejected["wrapped-ttl"]?["error"]?.stringValue?.hasSuffix("(got 9223372036854775808)") == true)
        #expect(rejected["no-prefix"]?["field"] == .string("to"))
        #expect(rejected["cut"]?["field"] == .string(""))
        #expect(rejected["cut"]?["error"]?.stringValue?.contains("not valid JSON") == true)
    }
}

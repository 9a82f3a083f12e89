import CCS
import CCSEmulator
import Foundation
import Testing

/// Device-group ack counts reach the `acked` event as the server wrote them (issue 7 item 7: no number is
/// wrapped, replaced or dropped), over real TLS against the emulator's `group-unusual-` ack rule.
@Suite(.serialized) struct GroupAckNumbersTests {
    @Test func unusualGroupCountsReachTheEventAsWritten() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        run.send([#"{"to":"group-unusual-k1","message_id":"g-unusual","data":{"a":"b"}}"#])
        run.endInput()
        await waitUntil("ccsd done", timeout: 30) { run.exited != nil }
        let text = (try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? ""
        let line = try #require(text.split(separator: "\n").first { $0.contains(#""event":"acked""#) }, "no acked event:\n\(text)")
        // Digit for digit: beyond UInt64, and a negative zero among the failed ids, as written.
        #expect(line.contains(#""success":\#(DownstreamPolicy.unusualGroupSuccess)"#), "\(line)")
        #expect(line.contains(#""failed_registration_ids":\#(DownstreamPolicy.unusualGroupFailedRegistrationIDs("group-unusual-k1"))"#), "\(line)")
        // A number no 64-bit float holds cannot be written for JSON readers: null, and decode_error names it.
        let event = try #require(try JSONValue.parse(String(line)).objectValue)
        #expect(event["failure"] == .null)
        #expect(event["decode_error"]?.stringValue?.contains("failure: number \(DownstreamPolicy.unusualGroupFailure)") == true, "\(line)")
        #expect(event["message_id"] == .string("g-unusual"))
    }
}

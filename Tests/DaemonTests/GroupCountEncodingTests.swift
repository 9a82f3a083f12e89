import CCS
import Testing
import XMLStream
@testable import Daemon

/// Device-group counts in `acked` events are written as the server wrote them (issue 7 item 7): a count
/// beyond any integer type digit for digit, non-string failed ids kept, and a number no 64-bit float holds
/// flagged in `decode_error` (it cannot be written for JSON readers).
@Suite struct GroupCountEncodingTests {
    /// The `acked` event line for a device-group ack whose gcm JSON is `json` (for message `g`, sent to `group-k`),
    /// through the parser and the dispatcher.
    func ackedLine(_ json: String) throws -> String {
        var dispatcher = Dispatcher(configuration: DispatcherConfiguration(endpoints: [Endpoint(host: "h", port: 1)], seed: 1))
        var connection: Int?
        for case .open(let id, _) in dispatcher.start(now: 0) { connection = id }
        let id = try #require(connection)
        _ = dispatcher.connectionReady(id, now: 0)
        let record = MessageRecord(messageID: "g", json: #"{"to":"group-k","message_id":"g"}"#, to: "group-k", rateKey: "group-k",
                                   acceptedAt: 0, acceptedAtUnixMillis: 0, timeToLive: 60)
        _ = dispatcher.submit([(record, nil)], now: 0)
        _ = dispatcher.persisted([PersistResult(messageID: "g", line: nil, outcome: .stored)], now: 0)
        let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                                children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
        let message = try #require(try InboundMessage.parse(stanza: stanza))
        for case .record(let request) in dispatcher.received(message, on: id, now: 0) {
            if case .acked = request.event { return request.event.jsonLine() }
        }
        Issue.record("no acked event")
        return ""
    }

    @Test func countsBeyondInt64AndNonStringIDsAreWrittenAsReceived() throws {
        let line = try ackedLine(#"{"from":"group-k","message_id":"g","message_type":"ack","success":18446744073709551617,"failure":-0,"failed_registration_ids":["a",5,2.50]}"#)
        #expect(line.contains(#""success":18446744073709551617"#), "\(line)")
        #expect(line.contains(#""failure":-0,"#), "\(line)")
        #expect(line.contains(#""failed_registration_ids":["a",5,2.50]"#), "\(line)")
        #expect(!line.contains("decode_error"), "\(line)")
    }

    @Test func countNoDoubleHoldsIsNullAndNamedInDecodeError() throws {
        let line = try ackedLine(#"{"from":"group-k","message_id":"g","message_type":"ack","success":1e400,"failure":2.5,"failed_registration_ids":["a",-1E999]}"#)
        let fields = try #require(try JSONValue.parse(String(line.dropLast())).objectValue, "\(line)")
        #expect(fields["success"] == .null)
        #expect(line.contains(#""failure":2.5"#), "\(line)")
        #expect(fields["failed_registration_ids"] == .array([.string("a"), .null]))
        let error = fields["decode_error"]?.stringValue ?? ""
        #expect(error.contains("success: number 1e400"), "\(error)")
        #expect(error.contains("failed_registration_ids[1]: number -1E999"), "\(error)")
    }
}

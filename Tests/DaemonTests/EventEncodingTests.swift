import CCS
import Testing
@testable import Daemon

/// Event lines on the outlet: one JSON object each, with an `event` field.
@Suite struct EventEncodingTests {
    func decode(_ event: DispatcherEvent) throws -> [String: JSONValue] {
        let line = event.jsonLine()
        #expect(line.hasSuffix("\n"))
        #expect(line.dropLast().contains("\n") == false)
        return try #require(try JSONValue.parse(String(line.dropLast())).objectValue)
    }

    @Test func ackedCarriesCanonicalTokenAndGroupCounts() throws {
        let fields = try decode(.acked(messageID: "m-1", to: "tok", canonicalRegistrationID: "new",
                                       group: GroupOutcome(success: 1, failure: 1, failedRegistrationIDs: ["x"])))
        #expect(fields["event"] == .string("acked"))
        #expect(fields["registration_id"] == .string("new"))
        #expect(fields["failed_registration_ids"] == .array([.string("x")]))
        #expect(fields["success"] == .int(1))
    }

    @Test func nackedHasFinalFlag() throws {
        let fields = try decode(.nacked(messageID: "m", error: "SERVICE_UNAVAILABLE", description: nil, final: false, invalidToken: false, group: nil))
        #expect(fields["final"] == .bool(false))
        #expect(fields["description"] == .null)
        #expect(fields["error"] == .string("SERVICE_UNAVAILABLE"))
    }

    /// `retryable` appears only when true; `outcome` is the stored final event, written as an object.
    @Test func rejectedCarriesRetryableAndTheStoredOutcome() throws {
        let plain = try decode(.rejected(messageID: "m", field: "message_id", error: "dup", line: 2))
        #expect(plain["retryable"] == nil)
        #expect(plain["outcome"] == nil)
        let retryable = try decode(.rejected(messageID: "m", field: "", error: "store", line: nil, retryable: true))
        #expect(retryable["retryable"] == .bool(true))
        let final = try decode(.rejected(messageID: "m", field: "message_id", error: "final", line: nil,
                                         outcome: #"{"event":"acked","message_id":"m","to":"t"}"#))
        #expect(final["outcome"]?["event"] == .string("acked"))
        #expect(final["outcome"]?["to"] == .string("t"))
    }

    @Test func upstreamDataIsWrittenBackExactly() throws {
        let data = JSONValue.object(["text": .string("<b>Tom & \"Jerry\"</b> ' 😀 ]]>\n\u{1}")])
        let fields = try decode(.upstream(.init(messageID: "u", from: "dev", category: "c", data: data, timeToLive: nil)))
        #expect(fields["data"] == data)
    }

    @Test func everyKindHasItsName() throws {
        let events: [(DispatcherEvent, String)] = [
            (.accepted(messageID: "a"), "accepted"),
            (.rejected(messageID: nil, field: "to", error: "e", line: 3), "rejected"),
            (.expired(messageID: "a"), "expired"),
            (.receipt(.init(messageID: "dr2:a", from: "gcm.googleapis.com", originalMessageID: "a", status: "S", deviceRegistrationID: "t", category: nil)), "receipt"),
            (.connection(id: 3, endpoint: Endpoint(host: "h", port: 5235), state: .draining, reason: nil), "connection"),
        ]
        for (event, name) in events {
            #expect(try decode(event)["event"] == .string(name))
        }
        #expect(try decode(.connection(id: 3, endpoint: Endpoint(host: "h", port: 5235), state: .draining, reason: nil))["endpoint"] == .string("h:5235"))
    }
}

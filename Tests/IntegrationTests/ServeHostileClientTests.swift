import CCS
import Foundation
import Testing

/// `ccsd serve` against careless and hostile API clients (docs/api.md): what a client cannot do to the
/// journal or to another service, and that a refusal names the field and the rule.
@Suite(.serialized) struct ServeHostileClientTests {
    static func message(_ id: String) -> String { ServeAPITests.message(id) }

    /// A cursor acknowledged past the journal's end would let the store prune the next events before anyone
    /// read them (and the feed without `after` would start past them): refused, naming `through` and the end.
    /// ccsd's own consumers (the events file, the webhook) cannot be moved through the API.
    @Test func anAcknowledgementPastTheJournalsEndOrOfAnInternalConsumerIsRefused() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        #expect(try bed.post(Self.message("h-1")).status == 202)
        #expect(bed.waitForFinal("h-1") != nil)
        let feed = try bed.curl(["http://localhost/v1/events?after=0&limit=1000"])
        let last = try #require(feed.json?["next"]?.intValue)
        #expect(last > 0)

        let beyond = try bed.post("{\"through\":\(last + 1_000_000)}", path: "/v1/events/ack")
        #expect(beyond.status == 400)
        #expect(beyond.json?["error"]?["code"] == .string("bad_request"))
        let text = beyond.json?["error"]?["message"]?.stringValue ?? ""
        #expect(text.hasPrefix("through:") && text.contains("\(last)"), "\(text)")
        for consumer in ["webhook", "events-file"] {
            let refused = try bed.post("{\"through\":\(last),\"consumer\":\"\(consumer)\"}", path: "/v1/events/ack")
            #expect(refused.status == 400 && refused.json?["error"]?["message"]?.stringValue?.hasPrefix("consumer:") == true)
        }
        // Acknowledging exactly the end is fine; the next message's events are kept and read from the cursor.
        #expect(try bed.post("{\"through\":\(last)}", path: "/v1/events/ack").status == 200)
        #expect(try bed.post(Self.message("h-2")).status == 202)
        #expect(bed.waitForFinal("h-2") != nil)
        let resumed = try bed.curl(["http://localhost/v1/events?limit=1000"])
        let events = resumed.json?["events"]?.arrayValue ?? []
        #expect(events.first?["seq"]?.intValue == last + 1)
        #expect(events.contains { $0["event"] == .string("acked") && $0["message_id"] == .string("h-2") })
        #expect(bed.stop() == 0)
    }
}

extension ServeHostileClientTests {
    /// The path of `GET /v1/messages/{id}` is percent-decoded once: an id holding `%` and hex digits, a slash
    /// or `..` is found by its percent-encoding, and not taken for another id.
    @Test func aMessageIDIsPercentDecodedExactlyOnce() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        for id in ["pct%41x", "a/../b"] {
            #expect(try bed.post(Self.message(id)).json?["accepted"]?.intValue == 1)
        }
        let found = try bed.curl(["http://localhost/v1/messages/pct%2541x"])
        #expect(found.status == 200 && found.json?["message_id"] == .string("pct%41x"), "\(found.body)")
        #expect(try bed.curl(["http://localhost/v1/messages/pctAx"]).status == 404)
        #expect(try bed.curl(["http://localhost/v1/messages/pct%41x"]).status == 404)
        let slashed = try bed.curl(["--path-as-is", "http://localhost/v1/messages/a%2F..%2Fb"])
        #expect(slashed.status == 200 && slashed.json?["message_id"] == .string("a/../b"), "\(slashed.body)")
        #expect(bed.stop() == 0)
    }
}

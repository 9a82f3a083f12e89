import CCS
import Foundation
import Testing

/// `max_event_backlog` end to end (docs/limits.md): `ccsd serve` whose event feed has a reader that stops
/// acknowledging answers `POST /v1/messages` with 503 once the unacknowledged events reach the limit, and takes
/// messages again once the feed is acknowledged. A feed nobody has ever acknowledged holds nothing back.
@Suite struct EventBacklogEndToEndTests {
    @Test func postIsRefusedAtTheBacklogLimitAndTakenAgainOnceTheFeedIsAcknowledged() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        let config = bed.directory + "/config.json"
        try Data(#"{"max_event_backlog": 6}"#.utf8).write(to: URL(fileURLWithPath: config))
        try bed.start(["--config", config])
        #expect(bed.waitUntilReady())
        // Nobody has acknowledged the feed yet: it does not count, however far it runs ahead of the limit.
        for index in 1...5 {
            #expect(try bed.post(ServeAPITests.message("unread-\(index)")).status == 202)
            #expect(bed.waitForFinal("unread-\(index)") != nil)
        }
        // A reader acknowledges the first event, then stops: from now on the feed counts.
        #expect(try bed.post("{\"through\":1}", path: "/v1/events/ack").status == 200)
        // Each message journals `accepted` and, once the emulator acks it, `acked`: nobody acknowledges them.
        var refused: HTTPResult?
        for index in 1...20 {
            let answer = try bed.post(ServeAPITests.message("b-\(index)"))
            if answer.status == 503 {
                refused = answer
                break
            }
            #expect(answer.status == 202)
            #expect(bed.waitForFinal("b-\(index)") != nil)
        }
        let full = try #require(refused, "never refused with max_event_backlog 6")
        #expect(full.headers["retry-after"] != nil)
        #expect(full.json?["error"]?["code"] == .string("unavailable"))
        #expect(full.json?["error"]?["message"]?.stringValue?.contains("max_event_backlog 6") == true)
        #expect(bed.log.contains("too many events not acknowledged by a consumer"))
        #expect(bed.log.contains("max_event_backlog=6"))
        // Acknowledge the whole feed: messages are taken again.
        let page = try bed.curl(["http://localhost/v1/events?after=0&limit=1000"])
        let next = try #require(page.json?["next"]?.intValue)
        #expect(next >= 6)
        #expect(try bed.post("{\"through\":\(next)}", path: "/v1/events/ack").status == 200)
        #expect(pollUntil(timeout: 10) { (try? bed.post(ServeAPITests.message("after-ack")))?.status == 202 })
        #expect(bed.waitForFinal("after-ack") != nil)
        #expect(bed.stop() == 0)
    }
}

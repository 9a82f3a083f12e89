import CCS
import Daemon
import Foundation
import Testing

/// A message of `POST /v1/messages` is refused like a line of `ccsd run`, and its `rejected` event carries
/// its 1-based position in the request as `line`, as a `ccsd run` rejection carries its input line.
@Suite struct DaemonAPILineTests {
    typealias Harness = DaemonDriverTests.Harness

    @Test func rejectionsOfAPIMessagesCarryTheirPositionAsLine() throws {
        let h = Harness()
        h.startReady()
        let texts = [#"{"to":"tok-l-APA91b","message_id":"l-1","time_to_live":600}"#,
                     #"{"to":"tok-l-APA91b","message_id":"l-2","time_to_live":2419201.0}"#,
                     #"{"to":"tok-l-APA91b","message_id":"l-1","time_to_live":600}"#]
        let items = texts.enumerated().map { CCSDaemon.IntakeItem.parsing(Array($1.utf8), line: $0 + 1, now: Date()) }
        final class Box: @unchecked Sendable { var results: [SubmissionResult]? }
        let box = Box()
        #expect(h.daemon.submitFromAPI(items, maxQueued: 100) { box.results = $0 } == nil)
        #expect(h.settle { box.results != nil })
        let rejected = try h.store.events(after: 0, limit: 100).map(\.line).filter { $0.contains(#""event":"rejected""#) }
        #expect(rejected.count == 2)
        // The invalid one (second in the request) and the duplicate (third).
        #expect(rejected.contains { $0.contains(#""message_id":"l-2""#) && $0.contains(#""line":2"#) && $0.contains("2419201.0") })
        #expect(rejected.contains { $0.contains(#""message_id":"l-1""#) && $0.contains(#""line":3"#) })
    }
}

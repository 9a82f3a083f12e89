import CCS
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// `max_pending_upstream` (docs/limits.md): a connection owed that many ACKs is not read until they fall to
/// half; nothing is dropped. The real daemon with a mock connection and a store whose commits are held.
@Suite struct UpstreamBackpressureTests {
    typealias Harness = DaemonDriverTests.Harness

    @Test func readingPausesAtTheBoundAndResumesOnceTheStoreCatchesUp() {
        let h = Harness()
        h.startReady()
        var configuration = h.daemon.configuration
        configuration.maxPendingUpstream = 4
        #expect(h.daemon.reload(configuration) == .applied(changes: ["max_pending_upstream 1000→4"]))
        h.store.holding = true
        for index in 1...3 { h.upstream("u-\(index)") }
        h.spin()
        #expect(!h.connection.readingPaused, "paused below the bound")
        h.upstream("u-4")
        #expect(h.settle { h.connection.readingPaused }, "not paused at 4 ACKs owed")
        #expect(h.daemon.dispatcher.acksOwed(on: h.connection.connectionID) == 4)
        // A stanza already read while paused is still handed over (nothing dropped).
        h.upstream("u-5")
        h.spin()
        #expect(h.sentAcks().isEmpty)
        h.store.release()
        #expect(h.settle { h.sentAcks().count == 5 && !h.connection.readingPaused })
        #expect(h.connection.readingPauseChanges == [true, false])
        #expect(h.events("upstream").count == 5)
        #expect(h.daemon.dispatcher.acksOwed(on: h.connection.connectionID) == 0)
    }

    @Test func theDefaultAndTheRangeOfTheKey() throws {
        #expect(Configuration().maxPendingUpstream == 1000)
        var configuration = Configuration()
        #expect(throws: ConfigurationError(field: "max_pending_upstream", rule: "must be an integer from 1 to 100000, got 0")) {
            try configuration.apply(fileContents: Data(#"{"max_pending_upstream":0}"#.utf8), path: "c.json")
        }
    }
}

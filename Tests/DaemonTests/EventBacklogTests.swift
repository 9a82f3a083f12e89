import CCS
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Daemon

/// `max_event_backlog` (docs/limits.md): events journaled and not yet acknowledged by the slowest registered
/// consumer hold new downstream messages at the limit until they fall to half; upstream goes on.
@Suite struct EventBacklogTests {
    typealias Harness = DaemonDriverTests.Harness

    @Test func theGateClosesAtTheLimitAndOpensAtHalfOncePerCrossing() {
        var gate = EventBacklogGate()
        let steps: [(backlog: Int64, closed: Bool, transition: EventBacklogGate.Transition?)] = [
            (0, false, nil), (9, false, nil), (10, true, .closed), (12, true, nil), (11, true, nil),
            (6, true, nil), (5, false, .opened), (9, false, nil), (10, true, .closed), (0, false, .opened),
        ]
        for step in steps {
            #expect(gate.update(backlog: step.backlog, limit: 10) == step.transition, "backlog \(step.backlog)")
            #expect(gate.isClosed == step.closed, "backlog \(step.backlog)")
        }
        // A limit of 1 opens only when everything is acknowledged.
        var one = EventBacklogGate()
        #expect(one.update(backlog: 1, limit: 1) == .closed)
        #expect(one.update(backlog: 1, limit: 1) == nil)
        #expect(one.update(backlog: 0, limit: 1) == .opened)
    }

    @Test func theBacklogIsCountedFromTheSlowestRegisteredConsumer() {
        #expect(EventBacklogGate.backlog(lastSeq: 50, cursors: [:]) == (0, nil))
        let backlog = EventBacklogGate.backlog(lastSeq: 50, cursors: ["api": 20, "webhook": 45])
        #expect(backlog.count == 30 && backlog.slowest == "api")
        #expect(EventBacklogGate.backlog(lastSeq: 50, cursors: ["webhook": 50]).count == 0)
    }

    private final class Counter: Sendable {
        let value = Locked(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    private static func items(_ ids: [String]) -> [CCSDaemon.IntakeItem] {
        ids.enumerated().map { index, id in
            let line = #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
            return .message(try! DownstreamIntake.parse(line: line, now: Date()).get(), line: index + 1)
        }
    }

    @Test func intakeWaitsAtTheLimitUpstreamGoesOnAndAcknowledgingToHalfResumesIt() {
        let h = Harness()
        h.startReady()
        var configuration = h.daemon.configuration
        configuration.maxEventBacklog = 4
        #expect(h.daemon.reload(configuration) == .applied(changes: ["max_event_backlog 1000000→4"]))
        h.daemon.registerEventConsumer("feed")
        #expect(h.settle { h.daemon.eventBacklog.slowest == "feed" })
        let resumed = Counter()
        h.daemon.submit(Self.items(["m-1", "m-2"])) { resumed.increment() }
        #expect(h.settle { h.events("accepted").count == 2 })
        #expect(resumed.count == 1 && !h.daemon.eventBacklogHoldsIntake)
        h.daemon.submit(Self.items(["m-3", "m-4"])) { resumed.increment() }
        #expect(h.settle { h.daemon.eventBacklogHoldsIntake }, "not held at 4 unacknowledged events")
        #expect(resumed.count == 2)
        // The batch already read is taken; the intake is not resumed.
        h.daemon.submit(Self.items(["m-5"])) { resumed.increment() }
        #expect(h.settle { h.events("accepted").count == 5 })
        h.spin()
        #expect(resumed.count == 2, "intake resumed past max_event_backlog")
        // The API is refused, naming the key.
        let refusal = h.daemon.submitFromAPI(Self.items(["m-6"]), maxQueued: 100) { _ in }
        guard case .eventBacklogFull(let backlog, 4)? = refusal else {
            Issue.record("expected eventBacklogFull, got \(String(describing: refusal))")
            return
        }
        #expect(backlog >= 4)
        #expect("\(refusal!)".contains("max_event_backlog 4"))
        // Upstream is still handed over and ACKed.
        h.upstream("u-1")
        #expect(h.settle { h.sentAcks().count == 1 })
        #expect(h.events("upstream").count == 1)
        // Acknowledged to above half: still held; to half: intake resumes.
        let last = h.daemon.lastJournaledSeq
        h.daemon.acknowledgeJournal(consumer: "feed", through: last - 3)
        h.spin()
        #expect(h.daemon.eventBacklogHoldsIntake && resumed.count == 2)
        h.daemon.acknowledgeJournal(consumer: "feed", through: last - 2)
        #expect(h.settle { resumed.count == 3 })
        #expect(!h.daemon.eventBacklogHoldsIntake)
        #expect(h.daemon.submitFromAPI(Self.items(["m-7"]), maxQueued: 100) { _ in } == nil)
    }

    @Test func withNoRegisteredConsumerNothingIsHeld() {
        let h = Harness()
        h.startReady()
        var configuration = h.daemon.configuration
        configuration.maxEventBacklog = 1
        _ = h.daemon.reload(configuration)
        let resumed = Counter()
        h.daemon.submit(Self.items(["m-1", "m-2", "m-3"])) { resumed.increment() }
        #expect(h.settle { h.events("accepted").count == 3 })
        #expect(!h.daemon.eventBacklogHoldsIntake && resumed.count == 1)
    }

    @Test func aReloadThatRaisesTheLimitReleasesIntake() {
        let h = Harness()
        h.startReady()
        var configuration = h.daemon.configuration
        configuration.maxEventBacklog = 2
        _ = h.daemon.reload(configuration)
        h.daemon.registerEventConsumer("feed")
        #expect(h.settle { h.daemon.eventBacklog.slowest == "feed" })
        h.daemon.submit(Self.items(["m-1", "m-2"])) {}
        #expect(h.settle { h.daemon.eventBacklogHoldsIntake })
        configuration.maxEventBacklog = 100
        #expect(h.daemon.reload(configuration) == .applied(changes: ["max_event_backlog 2→100"]))
        #expect(!h.daemon.eventBacklogHoldsIntake)
    }

    @Test func theJournalAccessMovesARegisteredCursorAndAnUnregisteredConsumerHoldsNothing() {
        let h = Harness()
        h.startReady()
        var configuration = h.daemon.configuration
        configuration.maxEventBacklog = 2
        _ = h.daemon.reload(configuration)
        h.daemon.registerEventConsumer("webhook")
        #expect(h.settle { h.daemon.eventBacklog.slowest == "webhook" })
        h.daemon.submit(Self.items(["m-1", "m-2"])) {}
        #expect(h.settle { h.daemon.eventBacklogHoldsIntake })
        // The webhook acknowledges through the journal access (from its own thread).
        h.daemon.journalAccess.acknowledge("webhook", h.daemon.lastJournaledSeq)
        #expect(h.settle { !h.daemon.eventBacklogHoldsIntake })
        h.daemon.submit(Self.items(["m-3", "m-4"])) {}
        #expect(h.settle { h.daemon.eventBacklogHoldsIntake })
        // Turned off (a reload without webhook_url): it holds nothing, and a late acknowledgement does not
        // count it again.
        h.daemon.unregisterEventConsumer("webhook")
        #expect(!h.daemon.eventBacklogHoldsIntake && h.daemon.eventBacklog.slowest == nil)
        h.daemon.journalAccess.acknowledge("webhook", 1)
        h.spin()
        #expect(h.daemon.eventBacklog.slowest == nil)
    }

    @Test func theDefaultAndTheRangeOfTheKey() throws {
        #expect(Configuration().maxEventBacklog == 1_000_000)
        var configuration = Configuration()
        try configuration.apply(fileContents: Data(#"{"max_event_backlog":1}"#.utf8), path: "c.json")
        #expect(configuration.maxEventBacklog == 1)
        #expect(throws: ConfigurationError(field: "max_event_backlog", rule: "must be an integer from 1 to 100000000, got 0")) {
            try configuration.apply(fileContents: Data(#"{"max_event_backlog":0}"#.utf8), path: "c.json")
        }
        #expect(throws: ConfigurationError(field: "max_event_backlog", rule: "must be an integer from 1 to 100000000, got 100000001")) {
            try configuration.apply(fileContents: Data(#"{"max_event_backlog":100000001}"#.utf8), path: "c.json")
        }
    }
}

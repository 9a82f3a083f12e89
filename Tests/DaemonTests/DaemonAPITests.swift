import CCS
import Daemon
import Foundation
import Store
import Synchronization
import Testing
import TestSupport

/// The daemon's side of the HTTP API, without sockets: a submission is answered only once each outcome is
/// durable, refusals, one message's state, and the journal observer (the long poll's wake-up).
@Suite struct DaemonAPITests {
    typealias Harness = DaemonDriverTests.Harness

    final class Answer: @unchecked Sendable {
        var results: [SubmissionResult]?
        var calls = 0
    }

    static func item(_ json: String) -> CCSDaemon.IntakeItem {
        switch DownstreamIntake.parse(line: json, now: Date()) {
        case .success(let message): .message(message, line: 0)
        case .failure(let error): .invalid(line: 0, messageID: nil, error: error)
        }
    }
    static func valid(_ id: String) -> CCSDaemon.IntakeItem {
        item(#"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#)
    }

    @Test func answersOnlyOnceEveryOutcomeIsCommitted() throws {
        let h = Harness()
        h.startReady()
        h.store.holding = true
        let answer = Answer()
        let refusal = h.daemon.submitFromAPI([Self.valid("a-1"), Self.item(#"{"to":"tok-x-APA91b","time_to_live":"600"}"#),
                                              Self.valid("a-1"), Self.valid("a-2")], maxQueued: 100) { results in
            answer.results = results
            answer.calls += 1
        }
        #expect(refusal == nil)
        h.spin()  // the commit is held: nothing is durable, nothing answered
        #expect(answer.results == nil)
        h.store.release()
        #expect(h.settle { answer.results != nil })
        let results = try #require(answer.results)
        #expect(results.count == 4)
        #expect(results[0] == .accepted(messageID: "a-1"))
        guard case .rejected(nil, "time_to_live", let rule, "\"600\"", _, false, nil) = results[1] else {
            Issue.record("not the time_to_live rejection: \(results[1])")
            return
        }
        #expect(!rule.isEmpty)
        guard case .rejected("a-1", "message_id", _, _, _, false, nil) = results[2] else {
            Issue.record("not the duplicate rejection: \(results[2])")
            return
        }
        #expect(results[3] == .accepted(messageID: "a-2"))
        // Durable: the accepted events and the rejections are in the journal.
        let journal = try h.store.events(after: 0, limit: 100).map(\.line)
        #expect(journal.filter { $0.contains("\"accepted\"") }.count == 2)
        #expect(journal.filter { $0.contains("\"rejected\"") }.count == 2)
        h.spin()
        #expect(answer.calls == 1)
    }

    @Test func refusesBeforeRunningWhenTheQueueIsFullAndWhileTheStoreIsDown() {
        let h = Harness()
        #expect(h.daemon.submitFromAPI([Self.valid("r-0")], maxQueued: 10) { _ in } == .notRunning(state: "idle"))
        h.startReady()
        #expect(h.daemon.submitFromAPI([Self.valid("r-1")], maxQueued: 1) { _ in } == nil)
        #expect(h.daemon.submitFromAPI([Self.valid("r-2")], maxQueued: 1) { _ in } == .queueFull(outstanding: 1, maxQueued: 1))

        // A full disk: the insert fails, the message is rejected (retryable) at once, and later batches are refused.
        h.store.failure = .full
        let answer = Answer()
        #expect(h.daemon.submitFromAPI([Self.valid("r-3")], maxQueued: 10) { answer.results = $0 } == nil)
        #expect(h.settle { answer.results != nil })
        guard case .rejected("r-3", _, _, _, _, true, nil)? = answer.results?.first else {
            Issue.record("not a retryable rejection: \(String(describing: answer.results))")
            return
        }
        #expect(h.daemon.submitFromAPI([Self.valid("r-4")], maxQueued: 10) { _ in } == .storeUnavailable)
    }

    @Test func reportsALiveMessageAndThenItsStoredOutcome() {
        let h = Harness()
        h.startReady()
        #expect(h.daemon.submitFromAPI([Self.valid("s-1")], maxQueued: 10) { _ in } == nil)
        #expect(h.settle { h.sentDownstream().count == 1 })
        let report = Locked<MessageReport?>(nil)
        h.daemon.messageReport("s-1") { result in report.withLock { $0 = try? result.get() } }
        #expect(report.withLock { $0?.state } == "in_flight")
        #expect(report.withLock { $0?.connection } == h.connection.connectionID)
        #expect(report.withLock { $0?.attempts } == 1)
        h.ack("s-1")
        #expect(h.settle { !h.events("acked").isEmpty })
        report.withLock { $0 = nil }
        h.daemon.messageReport("s-1") { result in report.withLock { $0 = try? result.get() } }
        #expect(h.settle { report.withLock { $0 != nil } })
        #expect(report.withLock { $0?.state } == "final")
        #expect(report.withLock { $0?.outcome?.contains("\"acked\"") } == true)
        let missing = Locked<Bool>(false)
        h.daemon.messageReport("nope") { result in missing.withLock { $0 = (try? result.get()) == .some(nil) } }
        #expect(h.settle { missing.withLock { $0 } })
    }

    @Test func observersLearnTheLastSeqOfEachCommitThatJournaled() {
        let h = Harness()
        let seqs = Locked<[Int64]>([])
        h.daemon.observeJournal { seq in seqs.withLock { $0.append(seq) } }
        h.startReady()
        #expect(h.daemon.submitFromAPI([Self.valid("o-1")], maxQueued: 10) { _ in } == nil)
        #expect(h.settle { !h.events("accepted").isEmpty })
        // By the time the accepted line is out, its commit was reported: the observer has its seq.
        let accepted = h.events("accepted").first?["seq"]?.intValue
        #expect(seqs.withLock { $0.contains(accepted ?? -1) })
        let journaled = (try? h.store.events(after: 0, limit: 100).map(\.seq)) ?? []
        #expect(seqs.withLock { $0.last } == journaled.last)
        #expect(seqs.withLock { $0 } == seqs.withLock { $0 }.sorted())
    }
}

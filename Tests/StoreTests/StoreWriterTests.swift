import CCS
import Foundation
import Testing
@testable import Store

/// Group commit: one transaction per loop turn (or per N operations) at most, the writer's queue committing
/// what was handed over as soon as it can; retries and fatal failures reported to the loop.
@Suite struct StoreWriterTests {
    @Test(arguments: StoreKind.allCases)
    func theOperationsOfOneTurnAreOneCommit(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try kind.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store)
        loop.turn {
            for n in 0..<500 { writer.enqueue(insert("m\(n)", line: n)) }
            writer.enqueue(upstream(1, "u1"))
        }
        #expect(loop.waitUntil { $0.committed.count == 1 })
        #expect(store.committedBatches.count == 1)
        let result = try #require(loop.reports.committed.first)
        #expect(result.persisted.count == 500 && result.persisted.allSatisfy { $0.outcome == .stored })
        #expect(result.persisted.map(\.line) == (0..<500).map { $0 })
        #expect(result.journaled.map(\.seq) == (1...501).map { Int64($0) })
        #expect(result.recordedThrough == 1)

        // The next turn is the next commit.
        loop.turn { writer.enqueue(final(2, "m0")) }
        #expect(loop.waitUntil { $0.committed.count == 2 })
        #expect(store.committedBatches.count == 2)
        #expect(try store.load(nowUnixMillis: 1_000).live.count == 499)
        store.close()
    }

    /// The in-memory store commits on the loop, one commit at a time: what arrives while one is in flight
    /// is the next batch.
    @Test func onTheLoopMaxOperationsCommitsEarlyAndWhatArrivesMeanwhileIsTheNextBatch() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.memory.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(maxOperations: 1000, commitsOnLoop: true))
        // One turn of 2,500: the first 1,000 go at once; the commit's completion (and with it the next
        // commit) waits for the turn's end; the other 1,500 form one batch.
        loop.turn { for n in 0..<2500 { writer.enqueue(insert("m\(n)")) } }
        #expect(loop.waitUntil { $0.persisted.count == 2500 })
        #expect(store.committedBatches.map(\.count) == [1000, 1500])
        #expect(loop.reports.persisted.map(\.messageID) == (0..<2500).map { "m\($0)" })
        #expect(loop.turn { writer.commitCount } == 2)
        store.close()
    }

    /// The writer's queue starts the next commit as soon as one ends, with what was handed to it meanwhile,
    /// without waiting for the loop to take the result: here the loop stays busy in one turn while the
    /// writer commits twice. Results still reach the loop in order.
    @Test func theWriterCommitsWhatWasHandedOverWithoutWaitingForTheLoop() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.sqlite.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(maxOperations: 1000))
        var secondCommitStartedInTheTurn = false
        loop.turn {
            for n in 0..<1000 { writer.enqueue(insert("m\(n)")) }  // handed over at once
            for _ in 0..<2000 where store.committedBatches.count < 1 { usleep(5_000) }
            for n in 1000..<2000 { writer.enqueue(insert("m\(n)")) }  // handed over while the loop is busy
            for _ in 0..<2000 where store.committedBatches.count < 2 { usleep(5_000) }
            secondCommitStartedInTheTurn = store.committedBatches.count == 2
        }
        #expect(secondCommitStartedInTheTurn)
        #expect(loop.waitUntil { $0.persisted.count == 2000 })
        #expect(store.committedBatches.map(\.count) == [1000, 1000])
        #expect(loop.reports.persisted.map(\.messageID) == (0..<2000).map { "m\($0)" })
        #expect(loop.turn { writer.commitCount } == 2)
        store.close()
    }

    /// Hand-offs that reach the writer while it is committing are merged into its next commit, in order.
    @Test func handOffsDuringACommitAreOneBatchInOrder() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.sqlite.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(maxOperations: 1))
        loop.turn {
            writer.enqueue(upstream(1, "u1"))  // handed over at once: the first commit
            for _ in 0..<2000 where store.committedBatches.isEmpty { usleep(1_000) }
            // The writer may still be in the first commit or have finished it: either way, what is handed
            // over from here on goes to later commits in order, never before u1.
            for id in 2...40 { writer.enqueue(upstream(UInt64(id), "u\(id)")) }
        }
        #expect(loop.waitUntil { $0.committed.flatMap(\.journaled).count == 40 })
        #expect(loop.reports.committed.flatMap(\.journaled).map(\.seq) == (1...40).map { Int64($0) })
        #expect(store.committedBatches.first?.count == 1)
        #expect(store.committedBatches.map(\.count).reduce(0, +) == 40)
        store.close()
    }

    /// A failed commit halts the writer: what was handed over after the failed batch is taken back and
    /// retried after it, in order; nothing is committed out of order or left behind.
    @Test func aFailedCommitTakesBackWhatWasHandedOverAfterItAndRetriesItInOrder() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.sqlite.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(maxOperations: 1, retryBase: .milliseconds(1),
                                                                        retryCap: .milliseconds(4)))
        store.failNext(diskFull)
        loop.turn {
            writer.enqueue(upstream(1, "u1"))  // handed over at once; its commit fails
            for _ in 0..<2000 where store.committedBatches.isEmpty { usleep(1_000) }
            usleep(20_000)  // the writer has halted (or is about to): these wait in the mailbox
            writer.enqueue(upstream(2, "u2"))
            writer.enqueue(upstream(3, "u3"))
        }
        #expect(loop.waitUntil { $0.contains(.available) })
        #expect(loop.waitUntil { $0.committed.flatMap(\.journaled).count == 3 })
        #expect(loop.reports.committed.flatMap(\.journaled).map(\.seq) == [1, 2, 3])
        // The failed try held u1 alone; the retry carried u1 with what came back.
        #expect(store.committedBatches.first?.count == 1)
        #expect(store.committedBatches.map(\.count).reduce(0, +) == 4)
        // Taking work again after the retry: the writer is no longer halted.
        loop.turn { writer.enqueue(upstream(4, "u4")) }
        #expect(loop.waitUntil { $0.committed.flatMap(\.journaled).count == 4 })
        store.close()
    }

    @Test func progressIsCoalescedPerMessageWithinABatch() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.memory.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store)
        loop.turn {
            writer.enqueue(insert("m"))
            for attempts in 1...10 {
                var record = message("m")
                record.attempts = attempts
                writer.enqueueProgress(record)
            }
        }
        #expect(loop.waitUntil { $0.committed.count == 1 })
        #expect(store.committedBatches.first?.count == 2)
        #expect(try store.load(nowUnixMillis: 1).live.first?.attempts == 10)
    }

    @Test func aRetryableFailureAnswersInsertsAndRetriesTheEventsUntilTheStoreTakesThem() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.sqlite.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(retryBase: .milliseconds(1),
                                                                        retryCap: .milliseconds(4)))
        loop.turn { writer.enqueue(insert("accepted-before")) }
        #expect(loop.waitUntil { $0.committed.count == 1 })

        store.failNext(diskFull, diskFull)
        loop.turn {
            writer.enqueue(insert("new"))
            writer.enqueue(final(1, "accepted-before"))
        }
        #expect(loop.waitUntil { $0.contains(.available) })
        #expect(loop.waitUntil { $0.committed.count == 2 })
        let reports = Array(loop.reports.dropFirst())
        #expect(reports == [
            .insertsFailed([PersistResult(messageID: "new", line: nil, outcome: .failed(reason:
                "store /state/ccsd.sqlite3: committing a batch failed: database or disk is full (SQLITE_FULL)"))]),
            .unavailable(diskFull),
            .unavailable(diskFull),
            .available,
            .committed(StoreCommitResult(journaled: [JournaledEvent(seq: 2, timeUnixMillis: 1_000,
                                                                    line: finalLine("accepted-before"))],
                                         recordedThrough: 1)),
        ])
        // The failed tries and the successful retry carried the same event; the insert was not retried.
        #expect(store.committedBatches.dropFirst().map(\.count) == [2, 1, 1])
        #expect(try store.load(nowUnixMillis: 1).live.isEmpty)

        // Taking messages again.
        loop.turn { writer.enqueue(insert("later")) }
        #expect(loop.waitUntil { $0.committed.count == 3 })
        #expect(loop.reports.committed.last?.persisted.map(\.outcome) == [.stored])
        store.close()
    }

    @Test func whileUnavailableInsertsAreAnsweredAtOnceAndAnEmptyRetryProbesTheStore() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.memory.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(retryBase: .milliseconds(200),
                                                                        retryCap: .milliseconds(200)))
        store.failNext(diskFull)
        loop.turn { writer.enqueue(insert("a")) }
        #expect(loop.waitUntil { $0.contains(.unavailable(diskFull)) })
        // The retry waits 200 ms: an insert now is answered without waiting for the disk.
        loop.turn { writer.enqueue(insert("b")) }
        #expect(loop.waitUntil { $0.persisted.map(\.messageID) == ["a", "b"] })
        #expect(loop.reports.persisted.allSatisfy { if case .failed = $0.outcome { true } else { false } })
        #expect(loop.waitUntil { $0.contains(.available) })
        #expect(store.committedBatches.last == StoreBatch())  // the probe
    }

    @Test func aFatalFailureIsReportedOnceAndTheWriterStops() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.memory.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store)
        store.failNext(corrupt)
        loop.turn {
            writer.enqueue(insert("a"))
            writer.enqueue(final(1, "x"))
        }
        #expect(loop.waitUntil { $0.contains(.fatal(corrupt)) })
        loop.turn {
            writer.enqueue(insert("b"))
            writer.enqueue(final(2, "x"))
        }
        var closed = false
        loop.turn { writer.close { closed = true } }
        #expect(loop.waitUntil { _ in loop.turn { closed } })
        #expect(loop.reports == [
            .insertsFailed([PersistResult(messageID: "a", line: nil, outcome: .failed(reason: corrupt.description))]),
            .fatal(corrupt),
        ])
        #expect(store.committedBatches.count == 1)
        #expect(store.closed)
    }

    @Test func closeCommitsWhatIsPendingThenClosesTheStore() throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try StoreKind.sqlite.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store)
        var closed = false
        loop.turn {
            writer.enqueue(insert("a"))
            writer.close { closed = true }
        }
        #expect(loop.waitUntil { _ in loop.turn { closed } })
        #expect(loop.reports.committed.map(\.persisted.count) == [1])
        #expect(store.closed)
        let reopened = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { reopened.close() }
        #expect(try reopened.load(nowUnixMillis: 1).live.map(\.messageID) == ["a"])
    }

    /// A consumer cursor rides on the next commit and starts none of its own, except at close.
    @Test(arguments: StoreKind.allCases)
    func anEventsCursorRidesOnTheNextCommitOrTheClose(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = ScriptedStore(try kind.make(in: directory))
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store)
        loop.turn { writer.enqueue(upstream(1, "u1")) }
        #expect(loop.waitUntil { $0.committed.count == 1 })
        loop.turn { writer.acknowledgeEvents(consumer: "events-file", through: 1) }
        loop.turn {}
        #expect(loop.turn { writer.commitCount } == 1, "a cursor alone started a commit")
        #expect(try store.cursor(of: "events-file") == nil)
        loop.turn { writer.enqueue(upstream(2, "u2")) }
        #expect(loop.waitUntil { $0.committed.count == 2 })
        #expect(try store.cursor(of: "events-file") == 1)
        loop.turn { writer.acknowledgeEvents(consumer: "events-file", through: 2) }
        var closed = false
        loop.turn { writer.close { closed = true } }
        #expect(loop.waitUntil { _ in loop.turn { closed } })
        #expect(store.committedBatches.count == 3)
        #expect(store.committedBatches.last?.eventCursors == ["events-file": 2])
    }

    @Test func retryDelayDoublesFromOneSecondToThirty() {
        let delays = (1...8).map { StoreWriter.retryDelay(failures: $0, base: .seconds(1), cap: .seconds(30)) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
    }
}

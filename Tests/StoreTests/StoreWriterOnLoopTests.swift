import CCS
import Dispatch
import Foundation
import Testing
@testable import Store

/// A store that never blocks is committed and read on the loop itself (`StoreWriter.Configuration.commitsOnLoop`):
/// no thread hop, the same batches and the same reports, still one turn later.
@Suite struct StoreWriterOnLoopTests {
    @Test func theInMemoryStoreIsCommittedOnTheLoopAndSQLiteOnTheWritersQueue() throws {
        let directory = TemporaryDirectory()
        let loop = TestLoop()
        #expect(loop.makeWriter(store: try StoreKind.memory.make(in: directory)).commitsOnLoop)
        let sqlite = try StoreKind.sqlite.make(in: directory)
        defer { sqlite.close() }
        #expect(!loop.makeWriter(store: sqlite).commitsOnLoop)
        #expect(!loop.makeWriter(store: ScriptedStore(try StoreKind.memory.make(in: directory))).commitsOnLoop)
    }

    @Test(arguments: [false, true])
    func commitsAndReadsRunOnTheLoopOnlyWhenAsked(onLoop: Bool) throws {
        let directory = TemporaryDirectory()
        let loop = TestLoop()
        let key = DispatchSpecificKey<Bool>()
        loop.queue.setSpecific(key: key, value: true)
        let store = WhereCalledStore(try StoreKind.memory.make(in: directory), key: key)
        let writer = loop.makeWriter(store: store, configuration: .init(commitsOnLoop: onLoop))
        loop.turn {
            for n in 0..<3 { writer.enqueue(insert("m\(n)", line: n)) }
            writer.enqueue(upstream(1, "u1"))
        }
        #expect(loop.waitUntil { $0.committed.count == 1 })
        let read = ReadBox()
        loop.turn {
            writer.read({ (store) throws(StoreError) -> Int in try store.events(after: 0, limit: 10).count }) { result in
                read.set(try? result.get())
            }
        }
        #expect(loop.waitUntil { _ in read.value != nil })
        #expect(read.value == 4)
        #expect(store.calls == [("commit", onLoop), ("events", onLoop)].map { "\($0.0) on loop: \($0.1)" })
        let result = try #require(loop.reports.committed.first)
        #expect(result.persisted.map(\.line) == [0, 1, 2])
        #expect(result.journaled.map(\.seq) == [1, 2, 3, 4])
        #expect(result.recordedThrough == 1)
        var closed = false
        loop.turn { writer.close { closed = true } }
        #expect(loop.waitUntil { _ in loop.turn { closed } })
    }

    /// On the loop the report still comes on a later turn, never inside the call that queued the operation:
    /// an operation queued when `maxOperations` are pending commits at once, inside `enqueue`.
    @Test func onTheLoopTheReportStillComesOnALaterTurn() throws {
        let directory = TemporaryDirectory()
        let loop = TestLoop()
        let writer = loop.makeWriter(store: try StoreKind.memory.make(in: directory),
                                     configuration: .init(maxOperations: 2, commitsOnLoop: true))
        let reportsInTurn = loop.turn { () -> Int in
            for n in 0..<5 { writer.enqueue(insert("m\(n)", line: n)) }
            return loop.reports.count
        }
        #expect(reportsInTurn == 0)
        #expect(loop.waitUntil { $0.persisted.count == 5 })
        #expect(loop.reports.persisted.map(\.line) == [0, 1, 2, 3, 4])
    }
}

/// The answer of one `read`, set on the loop and read by the test.
private final class ReadBox: @unchecked Sendable {
    private let lock = NSLock()
    private var answer: Int?
    var value: Int? {
        lock.lock()
        defer { lock.unlock() }
        return answer
    }
    func set(_ value: Int?) {
        lock.lock()
        answer = value
        lock.unlock()
    }
}

/// Notes, for each commit and read of the inner store, whether it ran on the loop (its queue has `key`).
private final class WhereCalledStore: Store.MessageStore, @unchecked Sendable {
    let inner: any Store.MessageStore
    let key: DispatchSpecificKey<Bool>
    private let lock = NSLock()
    private var noted: [String] = []

    init(_ inner: any Store.MessageStore, key: DispatchSpecificKey<Bool>) {
        self.inner = inner
        self.key = key
    }

    var calls: [String] {
        lock.lock()
        defer { lock.unlock() }
        return noted
    }

    private func note(_ call: String) {
        let onLoop = DispatchQueue.getSpecific(key: key) == true
        lock.lock()
        noted.append("\(call) on loop: \(onLoop)")
        lock.unlock()
    }

    func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot { try inner.load(nowUnixMillis: nowUnixMillis) }

    func commit(_ batch: StoreBatch, nowUnixMillis: Int64) throws(StoreError) -> StoreCommitResult {
        note("commit")
        return try inner.commit(batch, nowUnixMillis: nowUnixMillis)
    }

    func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] {
        note("events")
        return try inner.events(after: seq, limit: limit)
    }

    func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) {
        try inner.acknowledgeEvents(consumer: consumer, through: seq)
    }

    func cursor(of consumer: String) throws(StoreError) -> Int64? { try inner.cursor(of: consumer) }

    func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? { try inner.storedMessage(messageID) }

    func close() { inner.close() }
}

import CCS
import Testing
@testable import Store

/// The memory store keeps its messages in reused slots found through `SlotIndex` (progress under the
/// hash its batch computed, final messages pruned by slot); the SQLite store keeps the same rules in SQL.
/// Random batches over a small pool of message_ids (resubmissions of live and final messages, progress
/// coalesced in a batch and of final messages, second final events, retention running out and ids taken
/// again, slots freed and reused) must give both stores the same answers.
@Suite struct MemoryStoreAgreesWithSQLiteTests {
    @Test(arguments: [(0 as Int64, 1 as UInt64), (3, 2), (40, 3)])
    func randomBatchesGiveTheSameResultsAndState(retention: Int64, seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let configuration = StoreConfiguration(synchronous: .normal, finalRetentionMillis: retention,
                                               eventsRetentionMillis: 10)
        let memory = InMemoryMessageStore(configuration: configuration)
        let sqlite = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        defer {
            memory.close()
            sqlite.close()
        }
        var random = SplitMix64(seed: seed)
        let ids = (0..<24).map { "id-\($0)" } + ["a-message-id-longer-than-fifteen-bytes-\(seed)"]
        var now: Int64 = 1_000
        var recordID: UInt64 = 0
        for _ in 0..<250 {
            now += Int64.random(in: 0...2, using: &random)
            var b = StoreBatch()
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                let id = ids.randomElement(using: &random)!
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<4:
                    b.insert(insert(id, at: now))
                case 4..<7:
                    var progressed = message(id, acceptedAtUnixMillis: now)
                    progressed.attempts = Int.random(in: 0...5, using: &random)
                    progressed.sends = Int.random(in: 0...5, using: &random)
                    progressed.lastError = Bool.random(using: &random) ? nil : "SERVICE_UNAVAILABLE"
                    b.progress(progressed)
                default:
                    recordID += 1
                    b.record(final(recordID, id, Bool.random(using: &random) ? "acked" : "expired"))
                }
            }
            let fromMemory = try memory.commit(b, nowUnixMillis: now)
            let fromSQLite = try sqlite.commit(b, nowUnixMillis: now)
            #expect(fromMemory == fromSQLite, "commit at \(now)")
            for id in ids {
                #expect(try memory.storedMessage(id) == sqlite.storedMessage(id), "\(id) at \(now)")
            }
            #expect(try memory.load(nowUnixMillis: now) == sqlite.load(nowUnixMillis: now))
            #expect(try memory.events(after: 0, limit: 1_000) == sqlite.events(after: 0, limit: 1_000))
        }
    }

    /// The SQLite store writes a run of inserts by multi-row INSERTs of up to 64 messages and falls back to one
    /// by one when a message_id in the chunk is taken: runs around and past the chunk size, with a taken id
    /// (live, final within its retention, final past it, or twice in the run) at the first, last or a middle
    /// place of a chunk, must give the same outcomes, seqs, events and messages as the memory store.
    @Test(arguments: [1, 2, 63, 64, 65, 130])
    func longRunsOfInsertsWithTakenIDsGiveTheSameResults(run: Int) throws {
        let directory = TemporaryDirectory()
        let configuration = StoreConfiguration(synchronous: .normal, finalRetentionMillis: 100)
        let memory = InMemoryMessageStore(configuration: configuration)
        let sqlite = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        defer {
            memory.close()
            sqlite.close()
        }
        let setup = batch { b in
            for id in ["live", "final", "expired"] { b.insert(insert(id, at: 1_000)) }
            b.record(final(1, "final"))
            b.record(final(2, "expired"))
        }
        #expect(try memory.commit(setup, nowUnixMillis: 1_000) == sqlite.commit(setup, nowUnixMillis: 1_000))
        let finalAgain = batch { b in b.record(final(3, "live")) }
        var now: Int64 = 1_050
        for (round, taken) in [nil, "live", "final", "expired", "twice"].enumerated() {
            for place in Set([0, run / 2, run - 1, min(63, run - 1), min(64, run - 1)]).sorted() {
                now += 1
                var b = StoreBatch()
                for n in 0..<run {
                    let id = n == place ? (taken == "twice" ? "r\(round)-\(place)-0" : taken ?? "r\(round)-\(place)-\(n)")
                                        : "r\(round)-\(place)-\(n)"
                    b.insert(insert(id, at: now, line: n))
                }
                let fromMemory = try memory.commit(b, nowUnixMillis: now)
                let fromSQLite = try sqlite.commit(b, nowUnixMillis: now)
                #expect(fromMemory == fromSQLite, "taken \(taken ?? "none") at \(place) of \(run)")
            }
            if round == 2 { now += 200 }  // "final" is past its retention from here on
        }
        #expect(try memory.commit(finalAgain, nowUnixMillis: now) == sqlite.commit(finalAgain, nowUnixMillis: now))
        #expect(try memory.load(nowUnixMillis: now) == sqlite.load(nowUnixMillis: now))
        #expect(try memory.events(after: 0, limit: 100_000) == sqlite.events(after: 0, limit: 100_000))
        for id in ["live", "final", "expired"] {
            #expect(try memory.storedMessage(id) == sqlite.storedMessage(id), "\(id)")
        }
    }
}

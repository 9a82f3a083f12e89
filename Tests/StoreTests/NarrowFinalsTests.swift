import CCS
import Foundation
import Testing
@testable import Store

/// Schema version 3: a final is a row of its own in `finals`, keyed by its message's accept_seq, which the
/// writer keeps per live message (`SQLiteLiveMessages`); opening reads the live messages from the committed
/// live floor on.
@Suite struct NarrowFinalsTests {
    /// A database at schema version 2 (as the tenth round's ccsd left it) in `state`, with `rows` run on it.
    static func versionTwoDatabase(in state: String, _ rows: String) throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let database = try SQLiteDatabase(path: state + "/ccsd.sqlite3")
        defer { database.close() }
        try database.execute("PRAGMA journal_mode = WAL", operation: "test")
        try database.execute(SQLiteSchema.migrations[0], operation: "test")
        try database.execute(SQLiteSchema.migrations[1], operation: "test")
        try database.execute("PRAGMA user_version = 2", operation: "test")
        try database.execute(rows, operation: "test")
    }

    /// A version-2 database (finals inside the message rows, their JSON emptied) migrates: live messages stay
    /// live in accept order with their progress, a final one keeps its event, time and progress, and answers a
    /// duplicate with its outcome; the next commits work on the moved rows.
    @Test func aVersionTwoDatabaseMovesItsFinalsToRowsOfTheirOwn() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        try Self.versionTwoDatabase(in: state, """
                INSERT INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms, time_to_live,
                                      attempts, sends, last_error, final_event, final_at_ms) VALUES
                    ('live-2', 5, '{"to":"t5"}', 't5', 'k5', 1004, 60, 0, 0, NULL, NULL, NULL),
                    ('final-1', 2, '', '', '', 1001, 60, 3, 4, 'SERVICE_UNAVAILABLE', '\(finalLine("final-1"))', 5000),
                    ('live-1', 1, '{"to":"t1"}', 't1', 'k1', 1000, 600, 2, 3, 'INTERNAL_SERVER_ERROR', NULL, NULL);
                UPDATE store_state SET last_seq = 7;
                """)
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        #expect(try store.pragma("user_version") == 3)
        #expect(try store.integer("SELECT count(*) FROM finals") == 1)
        #expect(try store.integer("SELECT count(*) FROM live_messages") == 2)
        let snapshot = try store.load(nowUnixMillis: 6_000)
        #expect(snapshot.live.map(\.messageID) == ["live-1", "live-2"])
        #expect(snapshot.live.first?.attempts == 2 && snapshot.live.first?.sends == 3)
        #expect(snapshot.live.first?.lastError == "INTERNAL_SERVER_ERROR")
        #expect(snapshot.live.first?.json == #"{"to":"t1"}"#)
        let stored = try #require(try store.storedMessage("final-1"))
        #expect(stored.finalEvent == finalLine("final-1") && stored.finalAtUnixMillis == 5_000)
        #expect(stored.attempts == 3 && stored.sends == 4 && stored.lastError == "SERVICE_UNAVAILABLE")
        #expect(try store.commit(batch(inserting: ["final-1"]), nowUnixMillis: 6_000).persisted.map(\.outcome)
                == [.duplicateFinal(outcome: finalLine("final-1"))])
        // The moved live rows are known to the writer: a final of one is written, a second one is not journaled.
        let result = try store.commit(batch { b in
            b.record(final(1, "live-2"))
            b.record(final(2, "final-1"))
        }, nowUnixMillis: 7_000)
        #expect(result.journaled.map(\.seq) == [8])
        #expect(result.duplicateFinalRecords == [2])
        #expect(try store.load(nowUnixMillis: 7_000).live.map(\.messageID) == ["live-1"])
        #expect(try store.integer("SELECT live_floor FROM store_state") == 1)
    }

    /// A migration reports its target version when it starts and then at every interval while it runs (here
    /// an interval of 0: at each of SQLite's progress callbacks); opening a current database reports nothing,
    /// and neither does creating one.
    @Test func aMigrationReportsItsProgress() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        try Self.versionTwoDatabase(in: state, """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                INSERT INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms, time_to_live,
                                      final_event, final_at_ms)
                SELECT 'm' || i, i, '', '', '', 1000, 60, '{"event":"acked"}', 2000 FROM n;
                """)
        var reports: [Int] = []
        do {
            let store = try SQLiteMessageStore(directory: state, configuration: StoreConfiguration(),
                                               migrations: SQLiteSchema.migrations,
                                               migrationProgress: { reports.append($0) }, progressInterval: 0)
            defer { store.close() }
            #expect(try store.integer("SELECT count(*) FROM finals") == 20_000)
        }
        #expect(reports.count > 2 && reports.allSatisfy { $0 == 3 })
        reports.removeAll()
        let store = try SQLiteMessageStore(directory: state, migrationProgress: { reports.append($0) })
        defer { store.close() }
        let created = try SQLiteMessageStore(directory: directory.path + "/new", migrationProgress: { reports.append($0) })
        defer { created.close() }
        #expect(try created.pragma("user_version") == SQLiteSchema.currentVersion)
        #expect(reports.isEmpty)
    }

    /// The floor stays at a message that stays live while thousands after it become final (the writer's
    /// accept-order list is compacted meanwhile), so a reopen still finds it; once it is final too, the floor
    /// is the next seq and nothing is read.
    @Test func aMessageLiveForLongHoldsTheFloorAcrossCommitsAndReopens() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        var now: Int64 = 1_000
        var recordID: UInt64 = 0
        for round in 0..<3 {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            if round == 0 { _ = try store.commit(batch(inserting: ["pinned"]), nowUnixMillis: now) }
            #expect(try store.load(nowUnixMillis: now).live.map(\.messageID) == ["pinned"])
            for chunk in 0..<10 {
                let ids = (0..<150).map { "r\(round)-c\(chunk)-\($0)" }
                now += 1
                _ = try store.commit(batch(inserting: ids), nowUnixMillis: now)
                now += 1
                _ = try store.commit(batch { b in
                    for id in ids {
                        recordID += 1
                        b.record(final(recordID, id))
                    }
                }, nowUnixMillis: now)
                #expect(try store.integer("SELECT live_floor FROM store_state") == 1)
            }
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        _ = try store.commit(batch { b in b.record(final(recordID + 1, "pinned")) }, nowUnixMillis: now + 1)
        let lastSeq = try store.integer("SELECT last_seq FROM store_state")
        #expect(try store.integer("SELECT live_floor FROM store_state") == lastSeq + 1)
        #expect(try store.load(nowUnixMillis: now + 1).live.isEmpty)
    }

    /// Opening reads the live messages from the committed floor on: a live row below it is not read (which
    /// is why every commit writes the floor with its changes, and never above a live message).
    @Test func openingReadsTheLiveMessagesFromTheFloorOn() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a", "b", "c"]), nowUnixMillis: 1_000)
            _ = try store.commit(batch { b in b.record(final(1, "a")) }, nowUnixMillis: 2_000)
            #expect(try store.integer("SELECT live_floor FROM store_state") == 2)
            try store.execute("UPDATE store_state SET live_floor = 3")
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        #expect(try store.load(nowUnixMillis: 3_000).live.map(\.messageID) == ["c"])
    }

    /// A commit that fails after it changed the writer's live set (here at its journal, through a trigger)
    /// leaves that set as the database has it: the message it had made final is still live, so its progress
    /// is kept and its final is written; the message it had inserted goes in again once.
    @Test func aFailedCommitLeavesTheLiveSetAsTheDatabaseHasIt() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { store.close() }
        _ = try store.commit(batch(inserting: ["a", "b"]), nowUnixMillis: 1_000)
        try store.execute("""
            CREATE TRIGGER refuse BEFORE INSERT ON event_blocks BEGIN SELECT RAISE(ABORT, 'refused by a test'); END
            """)
        let failing = batch { b in
            b.record(final(1, "a"))
            b.insert(insert("c"))
        }
        #expect(throws: StoreError.self) { try store.commit(failing, nowUnixMillis: 2_000) }
        try store.execute("DROP TRIGGER refuse")
        var progressed = message("a")
        progressed.attempts = 4
        progressed.sends = 5
        _ = try store.commit(batch { b in b.progress(progressed) }, nowUnixMillis: 3_000)
        let progressedA = try #require(try store.storedMessage("a"))
        #expect(progressedA.attempts == 4 && progressedA.sends == 5 && progressedA.finalEvent == nil)
        let retried = try store.commit(failing, nowUnixMillis: 4_000)
        #expect(retried.duplicateFinalRecords.isEmpty)
        #expect(retried.persisted.map(\.outcome) == [.stored])
        _ = try store.commit(batch { b in
            b.record(final(2, "b"))
            b.record(final(3, "c"))
        }, nowUnixMillis: 5_000)
        let lastSeq = try store.integer("SELECT last_seq FROM store_state")
        #expect(try store.integer("SELECT live_floor FROM store_state") == lastSeq + 1)
        #expect(try store.storedMessage("a")?.finalEvent == finalLine("a"))
    }

    /// A batch's finals go in together, by multi-row INSERTs (here 150 of them: 128, 16, 4 and 2 rows), each with
    /// its own event and the progress it carries; a later insert of one of their message_ids in the same batch,
    /// and a second final of one, see them (written before the insert's and the final's reads).
    @Test func theFinalsOfABatchAreWrittenTogetherAndSeenByWhatFollowsInIt() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { store.close() }
        let ids = (0..<150).map { "m\($0)" }
        _ = try store.commit(batch(inserting: ids), nowUnixMillis: 1_000)
        let result = try store.commit(batch { b in
            for (index, id) in ids.enumerated() {
                if index % 3 == 0 {
                    var progressed = message(id)
                    progressed.attempts = index
                    progressed.sends = index + 1
                    progressed.lastError = index % 2 == 0 ? "E\(index)" : nil
                    b.progress(progressed)
                }
                b.record(final(UInt64(index + 1), id, index % 5 == 0 ? "expired" : "acked"))
            }
            b.insert(insert("m7"))
            b.record(final(151, "m8", "nacked"))
        }, nowUnixMillis: 2_000)
        #expect(result.persisted.map(\.outcome) == [.duplicateFinal(outcome: finalLine("m7"))])
        #expect(result.duplicateFinalRecords == [151])
        #expect(result.journaled.count == 150)
        for (index, id) in ids.enumerated() {
            let stored = try #require(try store.storedMessage(id))
            #expect(stored.finalEvent == finalLine(id, index % 5 == 0 ? "expired" : "acked"))
            #expect(stored.finalAtUnixMillis == 2_000)
            if index % 3 == 0 {
                #expect(stored.attempts == index && stored.sends == index + 1)
                #expect(stored.lastError == (index % 2 == 0 ? "E\(index)" : nil))
            } else {
                #expect(stored.attempts == 0 && stored.sends == 0 && stored.lastError == nil)
            }
        }
        #expect(try store.load(nowUnixMillis: 3_000).live.isEmpty)
    }

    /// Pruning walks the finals in accept order, with no index on their time. A final not due when the walk
    /// passes it (its message was live for long) does not hold back the ones after it, and is pruned once due;
    /// so is a final written after the walk passed its message. Neither is pruned early, and a reopen (the
    /// walk restarts from the committed prune floor) loses neither.
    @Test(arguments: [false, true])
    func finalsOfMessagesLiveForLongArePrunedOnceDueAndHoldNothingBack(reopen: Bool) throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let configuration = StoreConfiguration(finalRetentionMillis: 10_000)
        var store = try SQLiteMessageStore(directory: state, configuration: configuration)
        defer { store.close() }
        let empty = StoreBatch()
        _ = try store.commit(batch(inserting: ["slow", "late", "b"]), nowUnixMillis: 1_000)  // accept_seqs 1, 2, 3
        _ = try store.commit(batch { $0.record(final(1, "b")) }, nowUnixMillis: 1_001)
        _ = try store.commit(batch { $0.record(final(2, "slow")) }, nowUnixMillis: 9_000)
        _ = try store.commit(batch(inserting: ["c"], at: 5_000), nowUnixMillis: 5_000)
        _ = try store.commit(batch { $0.record(final(3, "c")) }, nowUnixMillis: 5_001)

        // Cutoff 2,000: "slow" (final at 9,000) waits, "b" after it is pruned, the walk stops at "c".
        _ = try store.commit(empty, nowUnixMillis: 12_000)
        #expect(try store.storedMessage("b") == nil)
        #expect(try store.storedMessage("slow")?.finalEvent == finalLine("slow"))
        #expect(try store.storedMessage("c")?.finalEvent == finalLine("c"))
        // "late" (accepted at 1,000) becomes final after the walk passed it.
        _ = try store.commit(batch { $0.record(final(4, "late")) }, nowUnixMillis: 12_001)
        #expect(try store.integer("SELECT prune_floor FROM store_state") == 1)

        // Cutoff 9,000: "c" is pruned; "slow" is not due yet (9,000 is not before the cutoff).
        _ = try store.commit(empty, nowUnixMillis: 19_000)
        #expect(try store.storedMessage("c") == nil)
        #expect(try store.storedMessage("slow") != nil && store.storedMessage("late") != nil)
        if reopen {
            store.close()
            store = try SQLiteMessageStore(directory: state, configuration: configuration)
        }
        // Cutoff 9,001: "slow" goes; "late" (final at 12,001) stays until cutoff 12,002.
        _ = try store.commit(empty, nowUnixMillis: 19_001)
        #expect(try store.storedMessage("slow") == nil)
        #expect(try store.storedMessage("late")?.finalEvent == finalLine("late"))
        _ = try store.commit(empty, nowUnixMillis: 22_001)
        #expect(try store.storedMessage("late") != nil)
        _ = try store.commit(empty, nowUnixMillis: 22_002)
        #expect(try store.storedMessage("late") == nil)
        #expect(try store.integer("SELECT count(*) FROM finals") == 0)
        #expect(try store.integer("SELECT count(*) FROM messages") == 0)
    }

    /// A wall clock that stepped back: the messages accepted before the step carry later times than those
    /// accepted after it. The walk steps over them, so the later finals are pruned on time; they are pruned once
    /// their own times are past the retention, not before, and a reopen (the walk from the committed floor)
    /// finds them again. With a prune limit of 2 the runs take several commits, and none is dropped half walked.
    @Test(arguments: [false, true], [1_000, 2])
    func aClockSteppedBackHoldsBackOnlyTheFinalsStampedBeforeTheStep(reopen: Bool, limit: Int) throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let configuration = StoreConfiguration(finalRetentionMillis: 10_000, pruneLimitPerCommit: limit)
        var store = try SQLiteMessageStore(directory: state, configuration: configuration)
        defer { store.close() }
        // Empty commits at `now`, enough for every walk to finish at the prune limit.
        func commits(at now: Int64) throws { for _ in 0..<5 { _ = try store.commit(StoreBatch(), nowUnixMillis: now) } }
        let ahead = (1...5).map { "ahead-\($0)" }
        _ = try store.commit(batch(inserting: ahead, at: 100_000), nowUnixMillis: 100_000)
        _ = try store.commit(batch { b in
            for (index, id) in ahead.enumerated() { b.record(final(UInt64(100 + index), id)) }
        }, nowUnixMillis: 100_001)
        // The clock steps back 50 s.
        _ = try store.commit(batch(inserting: ["b1", "b2", "b3"], at: 50_000), nowUnixMillis: 50_000)
        _ = try store.commit(batch { b in
            for (index, id) in ["b1", "b2", "b3"].enumerated() { b.record(final(UInt64(3 + index), id)) }
        }, nowUnixMillis: 50_001)
        _ = try store.commit(batch(inserting: ["c"], at: 60_000), nowUnixMillis: 60_000)
        _ = try store.commit(batch { $0.record(final(6, "c")) }, nowUnixMillis: 60_001)

        try commits(at: 61_000)  // cutoff 51,000
        for id in ["b1", "b2", "b3"] { #expect(try store.storedMessage(id) == nil) }
        for id in ahead { #expect(try store.storedMessage(id) != nil) }
        #expect(try store.storedMessage("c") != nil)
        #expect(try store.integer("SELECT prune_floor FROM store_state") == 1)
        if reopen {
            store.close()
            store = try SQLiteMessageStore(directory: state, configuration: configuration)
        }
        try commits(at: 70_002)  // cutoff 60,002
        #expect(try store.storedMessage("c") == nil)
        try commits(at: 110_001)  // cutoff 100,001: not before it
        for id in ahead { #expect(try store.storedMessage(id) != nil) }
        try commits(at: 110_002)
        for id in ahead { #expect(try store.storedMessage(id) == nil) }
        #expect(try store.integer("SELECT count(*) FROM finals") == 0)
        #expect(try store.integer("SELECT count(*) FROM messages") == 0)
    }

    /// A message accepted before the clock stepped back and final after it: its final is stamped before its
    /// accept time, and is pruned once its own stamp is past the retention, not once the accept time is
    /// (found by a break-it helper: it was held as long as the step).
    @Test(arguments: [false, true])
    func aFinalStampedBeforeItsMessagesAcceptTimeIsPrunedByItsOwnStamp(reopen: Bool) throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let configuration = StoreConfiguration(finalRetentionMillis: 10_000)
        var store = try SQLiteMessageStore(directory: state, configuration: configuration)
        defer { store.close() }
        _ = try store.commit(batch(inserting: ["f"], at: 100_000), nowUnixMillis: 100_000)
        if reopen {  // the live set's accept times come from the database too
            store.close()
            store = try SQLiteMessageStore(directory: state, configuration: configuration)
        }
        _ = try store.commit(batch { $0.record(final(1, "f")) }, nowUnixMillis: 50_001)  // the clock stepped back
        _ = try store.commit(StoreBatch(), nowUnixMillis: 60_001)  // cutoff 50,001: not before it
        #expect(try store.storedMessage("f")?.finalEvent == finalLine("f"))
        _ = try store.commit(StoreBatch(), nowUnixMillis: 60_002)
        #expect(try store.storedMessage("f") == nil)
        #expect(try store.integer("SELECT count(*) FROM messages") == 0)
    }

    /// A rate key equal to the target is stored as NULL and read back as the target; a different one is
    /// stored and read back as itself.
    @Test func aRateKeyIsStoredOnlyWhenItDiffersFromTheTarget() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let own = MessageRecord(messageID: "own", json: #"{"to":"t"}"#, to: "t", rateKey: "k", acceptedAt: 1,
                                acceptedAtUnixMillis: 1_000, timeToLive: 60)
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch { b in
                b.insert(StoreBatch.Insert(record: own, line: nil, acceptedLine: acceptedLine("own")))
                b.insert(insert("same"))
            }, nowUnixMillis: 1_000)
            #expect(try store.integer("SELECT count(*) FROM messages WHERE rate_key IS NULL") == 1)
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        let live = try store.load(nowUnixMillis: 2_000).live
        #expect(live.map(\.rateKey) == ["k", "tok-same"])
        #expect(live.map(\.to) == ["t", "tok-same"])
    }

    /// The live set against a plain model, under random inserts and removals (accept seqs increasing, with
    /// now and then one out of order): `find` agrees, and the floor is always the lowest live accept_seq.
    @Test(arguments: [1, 2, 3])
    func theLiveSetAgreesWithAModel(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var live = SQLiteLiveMessages()
        var model: [String: Int64] = [:]
        var next: Int64 = 1
        for step in 0..<20_000 {
            if model.isEmpty || random.next() % 100 < 52 {
                var acceptSeq = next
                if random.next() % 500 == 0, let low = model.values.min(), low > 1 { acceptSeq = low - 1 }
                guard !model.values.contains(acceptSeq) else { continue }
                if acceptSeq == next { next += 1 + Int64(random.next() % 3) }
                let id = "m\(step)"
                live.insert(id, hash: SlotIndex.hash(id), acceptSeq: acceptSeq, acceptedAt: acceptSeq * 10)
                model[id] = acceptSeq
            } else {
                // Mostly the oldest (acked in order), sometimes any.
                let id = random.next() % 4 == 0 ? model.keys.randomElement(using: &random)!
                    : model.min { $0.value < $1.value }!.key
                let found = live.find(id, hash: SlotIndex.hash(id))
                #expect(found?.acceptSeq == model[id] && found?.acceptedAt == model[id].map { $0 * 10 })
                if let found { live.remove(slot: found.slot) }
                model[id] = nil
            }
            #expect(live.count == model.count)
            #expect(live.floor(next: next) == model.values.min() ?? next)
        }
        #expect(live.find("absent", hash: SlotIndex.hash("absent")) == nil)
    }
}

/// A small deterministic generator (SplitMix64) for the model test.
private struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

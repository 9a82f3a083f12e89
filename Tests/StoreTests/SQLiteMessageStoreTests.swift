import CCS
import CSQLite
import Foundation
import Testing
@testable import Store

/// What only the durable store does: survive a reopen, migrate, lock its directory, apply its pragmas.
@Suite struct SQLiteMessageStoreTests {
    @Test func liveMessagesJournalSeqAndHandedOverIDsSurviveAReopen() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        var progressed = message("b")
        progressed.attempts = 1
        progressed.sends = 2
        progressed.lastError = "SERVICE_UNAVAILABLE"
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a", "b", "c"]), nowUnixMillis: 1_000)
            _ = try store.commit(batch { b in
                b.progress(progressed)
                b.record(final(1, "a"))
                b.record(upstream(2, "u1"))
            }, nowUnixMillis: 2_000)
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        let snapshot = try store.load(nowUnixMillis: 3_000)
        #expect(snapshot.live.map(\.messageID) == ["b", "c"])
        #expect(snapshot.live.first == {
            var expected = MessageRecord(messageID: "b", json: message("b").json, to: "tok-b", rateKey: "tok-b",
                                         acceptedAt: 1.0, acceptedAtUnixMillis: 1_000, timeToLive: 600)
            expected.attempts = 1
            expected.sends = 2
            expected.lastError = "SERVICE_UNAVAILABLE"
            return expected
        }())
        #expect(snapshot.handedOver == [HandedOverMessage(messageID: "u1", atUnixMillis: 2_000)])
        #expect(snapshot.lastSeq == 5)
        let next = try store.commit(batch(inserting: ["d"]), nowUnixMillis: 4_000)
        #expect(next.journaled.map(\.seq) == [6])
        #expect(try store.commit(batch(inserting: ["a"]), nowUnixMillis: 4_000).persisted.map(\.outcome)
                == [.duplicateFinal(outcome: finalLine("a"))])
    }

    /// A final's event and message_id are bound from the strings' own storage, without SQLite's copy: an
    /// inline (small) string, a heap string with non-ASCII text, and an empty event text (bound as '', since
    /// NULL would leave the message live) are stored exactly.
    @Test func aFinalsTextsAreStoredExactlyFromInlineHeapAndEmptyStrings() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { store.close() }
        let long = "m-" + String(repeating: "0123456789", count: 10)
        _ = try store.commit(batch(inserting: ["s", long, "e"]), nowUnixMillis: 1_000)
        let longLine = #"{"event":"acked","message_id":"\#(long)","error":"\#(String(repeating: "é😀", count: 50))"}"#
        let result = try store.commit(batch { b in
            b.record(StoreBatch.Record(id: 1, line: #"{"e":1}"#, finalMessageID: "s"))
            b.record(StoreBatch.Record(id: 2, line: longLine, finalMessageID: long))
            b.record(StoreBatch.Record(id: 3, line: "", finalMessageID: "e"))
        }, nowUnixMillis: 2_000)
        #expect(result.duplicateFinalRecords.isEmpty)
        #expect(try store.storedMessage("s")?.finalEvent == #"{"e":1}"#)
        #expect(try store.storedMessage(long)?.finalEvent == longLine)
        #expect(try store.storedMessage("e")?.finalEvent == "")
        #expect(try store.load(nowUnixMillis: 3_000).live.isEmpty)
    }

    /// The events of a commit are written in blocks of up to 256 events (one row each): counts around and
    /// past the block size keep contiguous seqs, the batch's order and every line, across commits and a reopen.
    @Test(arguments: [1, 63, 64, 65, 200, 255, 256, 257, 450])
    func theEventsOfABigCommitKeepContiguousSeqsAndTheirOrder(events: Int) throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        var expected: [String] = []
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            for round in 0..<2 {
                let ids = (0..<events).map { "m\(round)-\($0)" }
                let result = try store.commit(batch { b in
                    for (index, id) in ids.enumerated() {
                        if index % 2 == 0 { b.insert(insert(id)) } else { b.record(upstream(UInt64(index), id)) }
                    }
                }, nowUnixMillis: 1_000)
                let lines = ids.enumerated().map { index, id in
                    index % 2 == 0 ? acceptedLine(id) : #"{"event":"upstream","message_id":"\#(id)"}"#
                }
                #expect(result.journaled.map(\.seq) == Array(Int64(expected.count + 1)...Int64(expected.count + events)))
                #expect(result.journaled.map(\.line) == lines)
                expected += lines
            }
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        let journal = try store.events(after: 0, limit: 1_000)
        #expect(journal.map(\.seq) == Array(1...Int64(expected.count)))
        #expect(journal.map(\.line) == expected)
        #expect(journal.allSatisfy { $0.timeUnixMillis == 1_000 })
        #expect(try store.load(nowUnixMillis: 2_000).lastSeq == Int64(expected.count))
    }

    /// A progress followed by a final of the same message in one batch is written by the final's update
    /// (`progressCarriedByFinals`); the rows must be those of the progress update first, as the memory store
    /// (which applies them in order) has them: carried onto a live message, ignored for one already final, not
    /// carried past a second final, and not onto a message re-inserted in between (final past its retention).
    @Test func aProgressCarriedByAFinalInTheSameBatchLeavesTheRowsOfTheProgressFirst() throws {
        let directory = TemporaryDirectory()
        let configuration = StoreConfiguration(finalRetentionMillis: 10)
        let sqlite = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        let memory = InMemoryMessageStore(configuration: configuration)
        defer {
            sqlite.close()
            memory.close()
        }
        func progressed(_ id: String, _ attempts: Int) -> MessageRecord {
            var record = message(id, acceptedAtUnixMillis: 1_000)
            record.attempts = attempts
            record.sends = attempts + 1
            record.lastError = "SERVICE_UNAVAILABLE"
            return record
        }
        let batches: [(Int64, StoreBatch)] = [
            (1_000, batch(inserting: ["a", "b", "c", "x"])),
            (1_001, batch { b in
                b.progress(progressed("a", 1))  // carried by a's first final
                b.record(final(1, "a"))
                b.record(final(2, "a", "expired"))  // already final: not journaled
                b.record(final(3, "x"))
            }),
            (1_002, batch { b in
                b.progress(progressed("b", 2))
                b.insert(insert("b", at: 1_002))  // live: a duplicate, but the fold is not attempted across it
                b.record(final(4, "b"))
                b.progress(progressed("a", 3))  // a is final: ignored, carried or not
                b.record(final(5, "a"))
            }),
            (1_100, batch { b in
                b.progress(progressed("x", 4))  // x is final: ignored
                b.insert(insert("x", at: 1_100))  // past its retention: deleted and inserted again
                b.record(final(6, "x"))  // must not carry the progress onto the new row
                b.progress(progressed("c", 5))
                b.record(upstream(7, "u"))
                b.record(final(8, "c"))
            }),
        ]
        for (now, b) in batches {
            #expect(try sqlite.commit(b, nowUnixMillis: now) == memory.commit(b, nowUnixMillis: now))
            for id in ["a", "b", "c", "x"] {
                #expect(try sqlite.storedMessage(id) == memory.storedMessage(id), "\(id) at \(now)")
            }
            if now == 1_002 {  // a and b are pruned by the next commit
                #expect(try sqlite.storedMessage("a")?.attempts == 1)
                #expect(try sqlite.storedMessage("b")?.attempts == 2)
                #expect(try sqlite.storedMessage("b")?.finalEvent == finalLine("b"))
            }
        }
        #expect(try sqlite.storedMessage("c")?.attempts == 5)
        #expect(try sqlite.storedMessage("c")?.finalEvent == finalLine("c"))
        #expect(try sqlite.storedMessage("x")?.attempts == 0)
        #expect(try sqlite.storedMessage("x")?.finalAtUnixMillis == 1_100)
        #expect(try sqlite.events(after: 0, limit: 100) == memory.events(after: 0, limit: 100))
    }

    @Test func journalSeqIsNeverReusedEvenAfterEveryEventWasPruned() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let configuration = StoreConfiguration(eventsRetentionMillis: 1_000)
        do {
            let store = try SQLiteMessageStore(directory: state, configuration: configuration)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a", "b"]), nowUnixMillis: 1_000)
            try store.acknowledgeEvents(consumer: "http", through: 2)
            _ = try store.commit(StoreBatch(), nowUnixMillis: 1_000)  // a probe commit prunes too
            #expect(try store.events(after: 0, limit: 10).isEmpty)
        }
        let store = try SQLiteMessageStore(directory: state, configuration: configuration)
        defer { store.close() }
        #expect(try store.load(nowUnixMillis: 5_000).lastSeq == 2)
        #expect(try store.commit(batch(inserting: ["c"]), nowUnixMillis: 5_000).journaled.map(\.seq) == [3])
    }

    @Test func pruningIsBoundedPerCommit() throws {
        let directory = TemporaryDirectory()
        let configuration = StoreConfiguration(finalRetentionMillis: 100, eventsRetentionMillis: 100,
                                               dedupeWindowMillis: 100, pruneLimitPerCommit: 2)
        let store = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        defer { store.close() }
        let ids = (1...5).map { "m\($0)" }
        _ = try store.commit(batch { b in
            for id in ids { b.insert(insert(id)) }
            for (n, id) in ids.enumerated() { b.record(final(UInt64(n + 1), id)) }
            for n in 1...5 { b.record(upstream(UInt64(10 + n), "u\(n)")) }
        }, nowUnixMillis: 1_000)
        func rows(_ table: String) throws -> Int64 { try store.count(table) }
        #expect(try rows("events") == 15 && rows("messages") == 5 && rows("handed_over") == 5)

        _ = try store.commit(StoreBatch(), nowUnixMillis: 2_000)
        #expect(try rows("events") == 13 && rows("messages") == 3 && rows("handed_over") == 3)
        _ = try store.commit(StoreBatch(), nowUnixMillis: 2_000)
        _ = try store.commit(StoreBatch(), nowUnixMillis: 2_000)
        #expect(try rows("events") == 9 && rows("messages") == 0 && rows("handed_over") == 0)
    }

    @Test func synchronousIsFullByDefaultAndConfigurable() throws {
        let directory = TemporaryDirectory()
        do {
            let store = try SQLiteMessageStore(directory: directory.path + "/full")
            defer { store.close() }
            #expect(try store.pragma("synchronous") == 2)  // FULL
            #expect(try store.pragma("busy_timeout") == 5_000)
        }
        let store = try SQLiteMessageStore(directory: directory.path + "/normal",
                                           configuration: StoreConfiguration(synchronous: .normal))
        defer { store.close() }
        #expect(try store.pragma("synchronous") == 1)  // NORMAL
        #expect(try store.text("PRAGMA journal_mode") == "wal")
    }

    /// Deleted rows are not overwritten with zeros (Debian's libsqlite3 turns that on at build time): the
    /// writer's cost per message, with durability unchanged (`synchronous` stays as configured).
    @Test func secureDeleteIsOff() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { store.close() }
        #expect(try store.pragma("secure_delete") == 0)
        #expect(try store.pragma("synchronous") == 2)
    }

    /// The page cache is as configured (SQLite's 2,000 KiB by default), and holds to it while more rows
    /// than it holds go through it: with 512 KiB, about 2 MB less of ccsd's resident memory than SQLite's own.
    @Test func thePageCacheIsAsConfigured() throws {
        let directory = TemporaryDirectory()
        do {
            let store = try SQLiteMessageStore(directory: directory.path + "/default")
            defer { store.close() }
            #expect(try store.pragma("cache_size") == -2000)
        }
        let store = try SQLiteMessageStore(directory: directory.path + "/state",
                                           configuration: StoreConfiguration(pageCacheKiB: 512))
        defer { store.close() }
        #expect(try store.pragma("cache_size") == -512)
        for round in 0..<4 {
            _ = try store.commit(batch { b in for i in 0..<500 { b.insert(insert("c\(round)-\(i)", bytes: 2_000)) } },
                                 nowUnixMillis: 1_000)
        }
        #expect(try store.count("messages") == 2_000)  // about 4 MB of rows went through the cache
        #expect(store.memoryUsed().pageCache < 1_000_000)
        try store.setPageCache(kib: 1024)  // a reload that raised the intake byte bound
        #expect(try store.pragma("cache_size") == -1024)
    }

    /// Runs of inserts of every length from 1 to 130 are stored whole, by multi-row INSERTs of a power of two
    /// rows each; the prepared statements stay small (one per row count up to 64 took about 1 MB once every
    /// count had been met).
    @Test func runsOfInsertsOfEveryLengthAreStoredWithFewStatements() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state")
        defer { store.close() }
        var stored = 0
        for length in 1...130 {
            let ids = (0..<length).map { "run\(length)-\($0)" }
            let result = try store.commit(batch(inserting: ids), nowUnixMillis: 1_000)
            #expect(result.persisted.map(\.messageID) == ids)
            #expect(result.persisted.allSatisfy { $0.outcome == .stored })
            #expect(result.journaled.count == length)
            stored += length
        }
        #expect(try store.count("messages") == Int64(stored))
        let live = try store.load(nowUnixMillis: 2_000).live
        #expect(live.count == stored)
        #expect(Set(live.map(\.messageID)).count == stored)
        #expect(store.memoryUsed().statements < 400_000)
        #expect(SQLiteMessageStore.rowsPerInsertForTesting(remaining: 63) == 32)
        #expect(SQLiteMessageStore.rowsPerInsertForTesting(remaining: 64) == 64)
        #expect(SQLiteMessageStore.rowsPerInsertForTesting(remaining: 200) == 64)
        #expect(SQLiteMessageStore.rowsPerInsertForTesting(remaining: 2) == 2)
        #expect(SQLiteMessageStore.rowsPerInsertForTesting(remaining: 3) == 2)
    }

    /// A commit whose dirty pages outgrow the page cache, with a message_id already stored in its last run
    /// of inserts (so that run is rolled back to its savepoint and inserted one by one), is whole in the files
    /// as a kill -9 leaves them: the database and its WAL copied while the store is open, without the shared
    /// memory index. The store turns spilling off (`cache_spill = OFF`): with SQLite 3.40.1 (Debian 12), a
    /// `ROLLBACK TO` after dirty pages were spilled to the WAL lost a later commit in such a copy in a
    /// reproduction with an 8-page cache and updates of rows dirtied before the savepoint. The store's own
    /// pattern here held with spilling on too; the pragma's check is what fails without the setting.
    @Test func aLargeCommitWithATakenMessageIDSurvivesAsAKillLeavesTheFiles() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        #expect(try store.pragma("cache_spill") == 0)
        _ = try store.commit(batch(inserting: ["taken"]), nowUnixMillis: 1_000)
        for round in 0..<3 {
            // About 6 MB of rows (the default cache holds 2 MiB), the taken id in the last run of 64.
            let ids = (0..<1_500).map { "r\(round)-\($0)" } + ["taken"]
            _ = try store.commit(batch { b in for id in ids { b.insert(insert(id, bytes: 4_000)) } }, nowUnixMillis: 2_000)
            let copy = directory.path + "/copy-\(round)"
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: state + "/ccsd.sqlite3" + suffix) {
                try FileManager.default.copyItem(atPath: state + "/ccsd.sqlite3" + suffix, toPath: copy + "/ccsd.sqlite3" + suffix)
            }
            let recovered = try SQLiteMessageStore(directory: copy)
            defer { recovered.close() }
            #expect(try recovered.text("PRAGMA integrity_check") == "ok")
            #expect(try recovered.integer("SELECT count(*) FROM messages") == Int64(1 + 1_500 * (round + 1)))
        }
    }

    // MARK: - Schema versions

    @Test func anEmptyDatabaseFileIsMigratedToTheCurrentVersion() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: state + "/ccsd.sqlite3", contents: Data()))  // version 0
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        #expect(try store.pragma("user_version") == SQLiteSchema.currentVersion)
        #expect(try store.commit(batch(inserting: ["a"]), nowUnixMillis: 1).persisted.map(\.outcome) == [.stored])
    }

    @Test func migrationsRunInOrderAndOnlyTheMissingOnes() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a"]), nowUnixMillis: 1)
        }
        // A later version adds a column; running migration 1 again would fail (its tables exist).
        let later = SQLiteSchema.migrations + ["ALTER TABLE messages ADD COLUMN priority TEXT"]
        let store = try SQLiteMessageStore(directory: state, configuration: StoreConfiguration(), migrations: later)
        defer { store.close() }
        #expect(try store.pragma("user_version") == SQLiteSchema.currentVersion + 1)
        #expect(try store.load(nowUnixMillis: 1).live.map(\.messageID) == ["a"])
    }

    @Test func aDatabaseFromANewerVersionIsRefused() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a"]), nowUnixMillis: 1)
            try store.execute("PRAGMA user_version = 99")
        }
        let error = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: state) }
        #expect(error?.code == .schema)
        #expect(error?.retryable == false)
        #expect(error?.description == "store \(state)/ccsd.sqlite3: migrating the schema failed: the database has "
            + "schema version 99 but this ccsd knows versions up to 3: it was written by a newer ccsd")
        // Refused without touching it: the lock was released and the data is intact for the newer ccsd.
        let raw = try RawConnection(path: state + "/ccsd.sqlite3")
        #expect(try raw.integer("SELECT count(*) FROM messages") == 1)
    }

    // MARK: - The state directory

    @Test func theStateDirectoryIsCreatedPrivate() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/var/lib/ccsd"
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        var info = stat()
        #expect(stat(state, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(FileManager.default.fileExists(atPath: state + "/ccsd.sqlite3"))
        #expect(FileManager.default.fileExists(atPath: state + "/ccsd.lock"))
    }

    @Test func aSecondStoreOnTheSameDirectoryIsRefusedUntilTheFirstCloses() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let first = try SQLiteMessageStore(directory: state)
        let error = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: state) }
        #expect(error?.code == .directoryInUse)
        #expect(error?.description == "store \(state)/ccsd.lock: locking the state directory failed: another "
            + "process holds the lock (is another ccsd running with this state directory?)")
        first.close()
        let second = try SQLiteMessageStore(directory: state)
        second.close()
    }

    @Test func aStateDirectoryPathThatIsAFileIsAClearError() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/file"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        let error = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: path) }
        #expect(error?.description == "store \(path): creating the state directory failed: not a directory")
    }
}

/// A plain SQLite connection beside the store (what an operator's `sqlite3` shell would be).
final class RawConnection {
    let handle: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            throw CommandFailed(command: "sqlite3_open_v2 \(path)", status: 1)
        }
        handle = db
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw CommandFailed(command: sql + ": " + String(cString: sqlite3_errmsg(handle)), status: 1)
        }
    }

    func integer(_ sql: String) throws -> Int64 {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw CommandFailed(command: sql + ": " + String(cString: sqlite3_errmsg(handle)), status: 1)
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else {
            throw CommandFailed(command: sql + ": " + String(cString: sqlite3_errmsg(handle)), status: 1)
        }
        return sqlite3_column_int64(statement, 0)
    }
}

extension SQLiteMessageStore {
    func count(_ table: String) throws -> Int64 { try integer("SELECT count(*) FROM \(table)") }
}

import CCS
import CSQLite
import Foundation
import Testing
@testable import Store

/// Store failures with the exact error the operator sees (issue 8: full disk, read-only directory, corrupt
/// file, locked database), and what survives them.
@Suite struct SQLiteFailureTests {
    @Test(.enabled(if: TmpfsMount.isPermitted, "needs root to mount a small tmpfs"))
    func aFullDiskFailsTheCommitKeepsEverythingCommittedAndTakesWritesOnceSpaceIsBack() throws {
        let disk = try TmpfsMount(size: "512k")
        let state = disk.path + "/state"
        let store = try SQLiteMessageStore(directory: state)
        var committed: [String] = []
        let filler = try disk.fill(leaving: 48 * 1024)

        var failure: StoreError?
        for round in 0..<200 {
            let ids = (0..<10).map { "r\(round)-\($0)" }
            do throws(StoreError) {
                _ = try store.commit(batch { b in for id in ids { b.insert(insert(id, bytes: 1000)) } },
                                     nowUnixMillis: 1_000)
                committed += ids
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "the disk never filled")
        #expect(!committed.isEmpty)
        #expect(error.code == .full && error.retryable)
        #expect(error.description == "store \(state)/ccsd.sqlite3: committing a batch failed: "
            + "database or disk is full (SQLITE_FULL)")

        // Nothing committed is lost, on this connection and on a fresh one.
        #expect(try store.load(nowUnixMillis: 1_000).live.map(\.messageID) == committed)
        try FileManager.default.removeItem(atPath: filler)
        let later = try store.commit(batch(inserting: ["after"]), nowUnixMillis: 2_000)
        #expect(later.persisted.map(\.outcome) == [.stored])
        store.close()
        let reopened = try SQLiteMessageStore(directory: state)
        defer { reopened.close() }
        #expect(try reopened.load(nowUnixMillis: 2_000).live.map(\.messageID) == committed + ["after"])
        #expect(try reopened.text("PRAGMA integrity_check") == "ok")
    }

    /// The writer on a real full disk: the submitter of a new message gets a retryable failure at once, the
    /// event of an accepted message waits and is committed once space is back, without any new traffic.
    @Test(.enabled(if: TmpfsMount.isPermitted, "needs root to mount a small tmpfs"))
    func theWriterRetriesEventsThroughAFullDiskUntilSpaceIsBack() throws {
        let disk = try TmpfsMount(size: "512k")
        let state = disk.path + "/state"
        let store = try SQLiteMessageStore(directory: state)
        let loop = TestLoop()
        let writer = loop.makeWriter(store: store, configuration: .init(retryBase: .milliseconds(2),
                                                                        retryCap: .milliseconds(20)))
        loop.turn { writer.enqueue(insert("a")) }
        #expect(loop.waitUntil { $0.committed.count == 1 })

        let filler = try disk.fill(leaving: 0)
        loop.turn {
            writer.enqueue(insert("b", bytes: 2000))
            writer.enqueue(final(1, "a"))
        }
        let full = "store \(state)/ccsd.sqlite3: committing a batch failed: database or disk is full (SQLITE_FULL)"
        #expect(loop.waitUntil { $0.filter { if case .unavailable = $0 { true } else { false } }.count >= 3 })
        #expect(loop.reports[1] == .insertsFailed([PersistResult(messageID: "b", line: nil,
                                                                      outcome: .failed(reason: full))]))
        #expect(loop.reports.dropFirst(2).allSatisfy {
            if case .unavailable(let error) = $0 { error.description == full } else { false }
        })

        try FileManager.default.removeItem(atPath: filler)
        #expect(loop.waitUntil { $0.contains(.available) && $0.committed.count == 2 })
        #expect(loop.reports.committed.last?.journaled.map(\.line) == [finalLine("a")])
        var closed = false
        loop.turn { writer.close { closed = true } }
        #expect(loop.waitUntil { _ in loop.turn { closed } })
        let reopened = try SQLiteMessageStore(directory: state)
        defer { reopened.close() }
        #expect(try reopened.load(nowUnixMillis: 2_000).live.isEmpty)
        #expect(try reopened.events(after: 0, limit: 10).map(\.line) == [acceptedLine("a"), finalLine("a")])
    }

    /// Root ignores `chmod 0500`, so the read-only directory is a tmpfs remounted `ro`. (Linux refuses to
    /// remount a file system read-only while a file on it is open for writing, so this is the start of ccsd on
    /// a read-only state directory; a running store meets the same SQLite error at its next commit.)
    @Test(.enabled(if: TmpfsMount.isPermitted, "needs root to mount a small tmpfs"))
    func aReadOnlyStateDirectoryIsAFatalErrorNamingThePath() throws {
        let disk = try TmpfsMount(size: "4m")
        let state = disk.path + "/state"
        do {
            let store = try SQLiteMessageStore(directory: state)
            defer { store.close() }
            _ = try store.commit(batch(inserting: ["a"]), nowUnixMillis: 1_000)
        }

        try disk.remount(readOnly: true)
        let error = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: state) }
        #expect(error?.retryable == false)
        #expect(error?.code == .readOnly)
        #expect(error?.description == "store \(state)/ccsd.lock: opening the lock file failed: Read-only file system")

        // Nothing was lost: writable again, the committed message is there.
        try disk.remount(readOnly: false)
        let reopened = try SQLiteMessageStore(directory: state)
        defer { reopened.close() }
        #expect(try reopened.load(nowUnixMillis: 3_000).live.map(\.messageID) == ["a"])
    }

    @Test func aCorruptFileIsAFatalErrorNamingThePath() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
        #expect(FileManager.default.createFile(atPath: state + "/ccsd.sqlite3", contents: garbage))
        let error = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: state) }
        #expect(error?.code == .corrupt && error?.retryable == false)
        #expect(error?.description == "store \(state)/ccsd.sqlite3: configuring the database failed: "
            + "file is not a database (SQLITE_NOTADB)")
        // The failed open released the directory lock: a second try meets the same file, not a lock.
        let again = #expect(throws: StoreError.self) { try SQLiteMessageStore(directory: state) }
        #expect(again?.code == .corrupt)
    }

    @Test func aDatabaseLockedByAnotherConnectionIsRetryable() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let store = try SQLiteMessageStore(directory: state,
                                           configuration: StoreConfiguration(busyTimeoutMillis: 50))
        defer { store.close() }
        _ = try store.commit(batch(inserting: ["a"]), nowUnixMillis: 1_000)
        // An operator's shell holding a write transaction (the directory lock keeps a second ccsd out).
        let shell = try RawConnection(path: state + "/ccsd.sqlite3")
        try shell.execute("BEGIN IMMEDIATE")
        let error = #expect(throws: StoreError.self) {
            try store.commit(batch(inserting: ["b"]), nowUnixMillis: 2_000)
        }
        #expect(error?.code == .busy && error?.retryable == true)
        #expect(error?.description == "store \(state)/ccsd.sqlite3: committing a batch failed: "
            + "database is locked (SQLITE_BUSY)")
        try shell.execute("ROLLBACK")
        #expect(try store.commit(batch(inserting: ["b"]), nowUnixMillis: 3_000).persisted.map(\.outcome) == [.stored])
    }

    /// A writer killed in the middle of a transaction (`kill -9` of a `sqlite3` process whose uncommitted pages
    /// already reached the WAL) leaves nothing of it: not for a reader meanwhile, not after recovery.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "needs the sqlite3 CLI"))
    func aKilledWritersUncommittedTransactionIsInvisible() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        let database = state + "/ccsd.sqlite3"
        let store = try SQLiteMessageStore(directory: state)
        _ = try store.commit(batch(inserting: ["a", "b"]), nowUnixMillis: 1_000)
        let walBefore = (try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = ["-batch", database]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        defer {
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
        // A tiny cache makes SQLite spill the uncommitted pages into the WAL before any COMMIT.
        input.fileHandleForWriting.write(Data("""
            PRAGMA cache_size = 2;
            BEGIN IMMEDIATE;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO event_blocks (first_seq, last_seq, time_ms, lines) SELECT 1000000 + i, 1000000 + i, 0, printf('%.500c', 'x') FROM n;
            UPDATE messages SET final_event = 'killed' WHERE message_id = 'a';
            SELECT 'ready';

            """.utf8))
        var seen = ""
        for _ in 0..<100 where !seen.contains("ready") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        #expect(seen.contains("ready"))
        let walDuring = (try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0
        #expect(walDuring > walBefore + 1_000_000)  // the transaction's pages are on disk, uncommitted

        // A reader meanwhile sees only committed data.
        #expect(try store.events(after: 0, limit: 10_000).map(\.seq) == [1, 2])
        kill(pid, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        store.close()

        let reopened = try SQLiteMessageStore(directory: state)
        defer { reopened.close() }
        #expect(try reopened.events(after: 0, limit: 10_000).map(\.seq) == [1, 2])
        #expect(try reopened.load(nowUnixMillis: 2_000).live.map(\.messageID) == ["a", "b"])
        #expect(try reopened.commit(batch(inserting: ["c"]), nowUnixMillis: 2_000).journaled.map(\.seq) == [3])
        #expect(try reopened.text("PRAGMA integrity_check") == "ok")
    }
}

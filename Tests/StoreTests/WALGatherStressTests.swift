import CCS
import CSQLite
import CSQLiteWALGather
import Foundation
import Testing
@testable import Store

/// SQLite through the gathering VFS under spills (a tiny page cache), rolled-back transactions,
/// savepoints, checkpoints of every kind, WAL restarts, a second writer and a reader in the same process;
/// after every committed transaction the files as the kernel has them (copied, no close: what a kill -9
/// leaves) must open with SQLite's default VFS, pass integrity_check and hold exactly what was committed.
@Suite struct WALGatherStressTests {
    final class Connection {
        let db: OpaquePointer
        init(_ path: String, gather: Bool) throws {
            #expect(ccsd_wal_gather_register() == SQLITE_OK)
            var handle: OpaquePointer?
            let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                     gather ? ccsd_wal_gather_vfs_name() : nil)
            guard rc == SQLITE_OK, let handle else { throw StoreError(code: .other, path: path, operation: "open", message: "\(rc)") }
            db = handle
            sqlite3_busy_timeout(db, 5_000)
        }
        deinit { sqlite3_close_v2(db) }
        @discardableResult
        func exec(_ sql: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int32 {
            let rc = sqlite3_exec(db, sql, nil, nil, nil)
            #expect(rc == SQLITE_OK, "\(sql): \(String(cString: sqlite3_errmsg(db)))", sourceLocation: sourceLocation)
            return rc
        }
        func rows(_ sql: String) -> [[String]] {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
                Issue.record("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
                return []
            }
            defer { sqlite3_finalize(statement) }
            var out: [[String]] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                out.append((0..<sqlite3_column_count(statement)).map { column in
                    sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "NULL"
                })
            }
            return out
        }
    }

    @Test(arguments: ["NORMAL", "FULL"], [true, false])
    func committedStateSurvivesACopyOfTheFilesAfterEveryCommit(synchronous: String, gather: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/db"
        let snapshot = directory.path + "/snap"
        let writer = try Connection(path, gather: gather)
        writer.exec("PRAGMA page_size=1024; PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous); PRAGMA cache_size=8; PRAGMA wal_autocheckpoint=50; PRAGMA journal_size_limit=20000")
        writer.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB, n INTEGER)")
        let second = try Connection(path, gather: gather)
        second.exec("PRAGMA synchronous=\(synchronous); PRAGMA cache_size=5")
        let reader = try Connection(path, gather: gather)
        var rng = SplitMix64(seed: synchronous == "FULL" ? 1 : 2)
        // Savepoints rolled back after a cache spill are off unless WAL_STRESS_SAVEPOINT=1: with them, the system
        // SQLite (3.40.1) loses committed rows from the copied files through its own default VFS as well
        // (docs/decisions.md: the store turns cache spilling off), so they say nothing about the gathering VFS.
        // WAL_STRESS_OFF: a comma-separated list of other steps to leave out.
        var off = Set((ProcessInfo.processInfo.environment["WAL_STRESS_OFF"] ?? "").split(separator: ",").map(String.init))
        if ProcessInfo.processInfo.environment["WAL_STRESS_SAVEPOINT"] != "1" { off.insert("savepoint") }
        var committed: [Int: Int] = [:]  // id -> n
        var nextID = 1
        for round in 0..<400 {
            let connection = Bool.random(using: &rng) && !off.contains("second") ? second : writer
            var pending = committed
            connection.exec("BEGIN IMMEDIATE")
            let statements = Int.random(in: 1...30, using: &rng)
            for _ in 0..<statements {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<6:
                    let size = Int.random(in: 1...(Int.random(in: 0..<10, using: &rng) == 0 ? 20_000 : 900), using: &rng)
                    let n = Int.random(in: 0..<1_000_000, using: &rng)
                    connection.exec("INSERT INTO t VALUES(\(nextID), randomblob(\(size)), \(n))")
                    pending[nextID] = n
                    nextID += 1
                case 6..<8:
                    if let id = pending.keys.randomElement(using: &rng) {
                        connection.exec("DELETE FROM t WHERE id=\(id)")
                        pending[id] = nil
                    }
                case 8 where !off.contains("savepoint"):
                    // A savepoint that is rolled back: its frames may be written and then written again.
                    connection.exec("SAVEPOINT s")
                    connection.exec("INSERT INTO t VALUES(\(nextID + 1_000_000), randomblob(3000), 1)")
                    connection.exec("UPDATE t SET v = randomblob(1500) WHERE id IN (SELECT id FROM t ORDER BY random() LIMIT 20)")
                    connection.exec("ROLLBACK TO s; RELEASE s")
                default:
                    if let id = pending.keys.randomElement(using: &rng) {
                        let n = Int.random(in: 0..<1_000_000, using: &rng)
                        connection.exec("UPDATE t SET n=\(n), v=randomblob(\(Int.random(in: 1...2000, using: &rng))) WHERE id=\(id)")
                        pending[id] = n
                    }
                }
            }
            if Int.random(in: 0..<6, using: &rng) == 0 && !off.contains("rollback") {
                connection.exec("ROLLBACK")
            } else {
                connection.exec("COMMIT")
                committed = pending
            }
            // The reader sees what was committed, through its own gathered WAL file.
            let seen = reader.rows("SELECT count(*), coalesce(sum(n),0) FROM t")
            #expect(seen.first == ["\(committed.count)", "\(committed.values.reduce(0, +))"], "round \(round) reader")
            switch off.contains("checkpoint") ? 99 : Int.random(in: 0..<12, using: &rng) {
            case 0: writer.exec("PRAGMA wal_checkpoint(PASSIVE)")
            case 1: second.exec("PRAGMA wal_checkpoint(RESTART)")
            case 2: writer.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            default: break
            }
            // What a kill -9 now leaves: the files as the kernel has them (no -shm: recovery rebuilds it).
            try? FileManager.default.removeItem(atPath: snapshot)
            try FileManager.default.createDirectory(atPath: snapshot, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: snapshot + "/db" + suffix)
            }
            let copy = try Connection(snapshot + "/db", gather: false)
            #expect(copy.rows("PRAGMA integrity_check") == [["ok"]], "round \(round)")
            let state = copy.rows("SELECT id, n FROM t ORDER BY id")
            let expected = committed.sorted { $0.key < $1.key }.map { ["\($0.key)", "\($0.value)"] }
            #expect(state == expected, "round \(round): \(state.count) rows, expected \(expected.count)")
            if state != expected { return }
        }
    }
}

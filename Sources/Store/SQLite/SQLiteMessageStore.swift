import CCS
import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable store: `DIR/ccsd.sqlite3` on Debian's libsqlite3, in WAL mode, one transaction per commit.
///
/// - The state directory is created if missing (0700) and locked (`DIR/ccsd.lock`, exclusive `flock`) for the
///   store's life: a second store on the same directory fails with `StoreError.directoryInUse`.
/// - Durability: `PRAGMA synchronous` per `StoreConfiguration.synchronous` (default FULL: a returned commit
///   survives a power cut; NORMAL: it survives `kill -9` only). `busy_timeout` bounds waits for a reader
///   such as an inspecting `sqlite3` shell.
/// - Schema: `SQLiteSchema` (`PRAGMA user_version`, ordered migrations; a newer database is refused).
/// - Statements are prepared once and reused; per commit, the events are written as blocks of consecutive
///   events (`writeJournal`, one row per block) and a final carries its message's progress of the same batch
///   (`progressCarriedByFinals`). Pruning (final messages after `finalRetentionMillis`, events
///   acknowledged by every consumer or older than `eventsRetentionMillis`, handed-over ids after
///   `dedupeWindowMillis`) runs inside commits, at most `pruneLimitPerCommit` rows per table each.
///
/// Every failure is a `StoreError` naming the database path and SQLite's message. Used from one thread at a
/// time (the `StoreWriter`'s queue).
public final class SQLiteMessageStore: MessageStore {
    public let directory: String
    /// `DIR/ccsd.sqlite3`.
    public let databasePath: String
    public let configuration: StoreConfiguration
    private var lock: DirectoryLock?
    private var database: SQLiteDatabase?
    private var statements: Statements?
    private var lastSeq: Int64 = 0
    /// The live messages' accept_seqs (schema version 3: a final is keyed by its message's), and the floor
    /// as last committed (`store_state.live_floor`). `liveIsStale` when opened (until `load` reads the live
    /// rows) and after a failed commit: rebuilt from the database before the next commit.
    private var live = SQLiteLiveMessages()
    private var liveFloor: Int64 = 0
    private var liveIsStale = false
    /// The walk that prunes final messages, and its floor as last committed (`store_state.prune_floor`).
    private var finalsPruning = SQLiteFinalsPruning(floor: 0)
    private var pruneFloor: Int64 = 0
    /// The text of the events block being written or cut (kept: no allocation per commit).
    private var blockText: [UInt8] = []
    /// The text parameters of a multi-row insert (kept: no allocation per statement).
    private var texts = SQLiteTextArena()

    /// Opens (creating the directory and the database if missing), locks the directory and migrates.
    /// - Parameter migrationProgress: called on this thread with the schema version a migration of an existing
    ///   database moves it to, when it starts and then about every `migrationProgressInterval` seconds while it
    ///   runs (a migration rewrites tables: a few seconds per million retained messages), so that the caller can
    ///   tell its supervisor the start is still going (systemd's `EXTEND_TIMEOUT_USEC`). Not called when the
    ///   database is created.
    /// - Throws: `StoreError`: `directoryInUse`, `cannotOpen`, `readOnly`, `corrupt`, `io`, `schema` (a
    ///   database from a newer ccsd), each naming the path.
    public convenience init(directory: String, configuration: StoreConfiguration = StoreConfiguration(),
                            migrationProgress: ((Int) -> Void)? = nil) throws(StoreError) {
        try self.init(directory: directory, configuration: configuration, migrations: SQLiteSchema.migrations,
                      migrationProgress: migrationProgress)
    }

    /// Seconds between two `migrationProgress` calls while one migration runs.
    public static let migrationProgressInterval = 1.0

    /// With an explicit migration list (tests of the migration mechanism) and progress interval (seconds).
    init(directory: String, configuration: StoreConfiguration, migrations: [String],
         migrationProgress: ((Int) -> Void)? = nil,
         progressInterval: Double = SQLiteMessageStore.migrationProgressInterval) throws(StoreError) {
        self.directory = directory
        self.databasePath = directory.hasSuffix("/") ? directory + "ccsd.sqlite3" : directory + "/ccsd.sqlite3"
        self.configuration = configuration
        let lock = try DirectoryLock(directory: directory)
        let database = try SQLiteDatabase(path: databasePath)
        do throws(StoreError) {
            try SQLiteMessageStore.configure(database, configuration: configuration)
            try SQLiteMessageStore.migrate(database, migrations: migrations, progress: migrationProgress,
                                           interval: progressInterval)
            // No dirty page is written to the WAL before its transaction commits. With SQLite 3.40.1 (Debian 12)
            // a `ROLLBACK TO` after such a spill can leave a WAL whose recovery lacks a later commit (the
            // files as a kill -9 leaves them; reproduced with a small cache and updates of rows dirtied before
            // the savepoint), and `insertAll` rolls back to a savepoint whenever a run of inserts holds a taken
            // message_id. A commit is bounded (`StoreWriter.Configuration.maxOperations`, the prune limits), so
            // the cache grows past `cache_size` by at most one commit's pages. Set after the migrations: one
            // of an old database may be larger than any commit.
            try database.execute("PRAGMA cache_spill = OFF", operation: "configuring the page cache")
            statements = try Statements(database)
            lastSeq = try database.integer("""
                SELECT max(last_seq, coalesce((SELECT last_seq FROM event_blocks ORDER BY first_seq DESC LIMIT 1), 0))
                FROM store_state
                """, operation: "reading the journal")
            liveFloor = try database.integer("SELECT live_floor FROM store_state", operation: "reading the live floor")
            pruneFloor = try database.integer("SELECT prune_floor FROM store_state", operation: "reading the prune floor")
            finalsPruning = SQLiteFinalsPruning(floor: pruneFloor)
            // Read by `load` (which reads every live row anyway) or, without it, before the first commit.
            liveIsStale = true
        } catch {
            statements = nil
            database.close()
            lock.unlock()
            throw error
        }
        self.lock = lock
        self.database = database
    }

    deinit { close() }

    public func close() {
        statements = nil  // finalizes every prepared statement before the connection closes
        database?.close()
        database = nil
        lock?.unlock()
        lock = nil
    }

    private static func configure(_ database: SQLiteDatabase, configuration: StoreConfiguration) throws(StoreError) {
        let operation = "configuring the database"
        guard let db = database.handle else { return }
        // SQLite falls back to read-only when the file cannot be opened for writing; ccsd cannot work so.
        guard sqlite3_db_readonly(db, "main") != 1 else {
            throw StoreError(code: .readOnly, path: database.path, operation: "opening the database",
                             message: "the file can only be opened read-only (check its owner, mode and file system)")
        }
        sqlite3_busy_timeout(db, configuration.busyTimeoutMillis)
        // Reading the journal mode is the first access to the file: garbage shows up here as SQLITE_NOTADB.
        let mode = try database.text("PRAGMA journal_mode = WAL", operation: operation)
        guard mode?.lowercased() == "wal" else {
            throw StoreError(code: .other, path: database.path, operation: operation,
                             message: "could not switch to WAL mode (journal_mode is \(mode ?? "unknown"))")
        }
        try database.execute("PRAGMA synchronous = \(configuration.synchronous.rawValue)", operation: operation)
        // After a burst, truncate the WAL back to at most 64 MiB at checkpoints instead of keeping its peak size.
        try database.execute("PRAGMA journal_size_limit = 67108864", operation: operation)
        // Debian's libsqlite3 is built with SQLITE_SECURE_DELETE (SQLite's own default is off): every deleted
        // row and emptied text was overwritten with zeros, and freed pages written out. What the store deletes
        // or empties (a final message's JSON, pruned rows) stays behind no access the file does not already
        // need (the state directory is made 0700; targets stay in retained final events anyway). Off: about 1,000
        // instructions per message fewer in the writer, and a WAL frame fewer per commit.
        try database.execute("PRAGMA secure_delete = OFF", operation: operation)
        // The page cache's size (`StoreConfiguration.pageCacheKiB`; SQLite's own default is 2,000 KiB).
        try setPageCache(database, kib: configuration.pageCacheKiB, operation: operation)
    }

    /// Sets `PRAGMA cache_size` to `kib` KiB (a reload that changes the intake byte bound).
    /// - Throws: `StoreError` naming the database path and SQLite's message, or that the store is closed.
    public func setPageCache(kib: Int) throws(StoreError) {
        let operation = "resizing the page cache"
        try Self.setPageCache(open(operation).0, kib: kib, operation: operation)
    }

    /// `PRAGMA cache_size` in KiB (a negative size is KiB to SQLite, a positive one pages).
    private static func setPageCache(_ database: SQLiteDatabase, kib: Int, operation: String) throws(StoreError) {
        try database.execute("PRAGMA cache_size = -\(kib)", operation: operation)
    }

    /// `Statements.rowsPerInsert` (tests).
    static func rowsPerInsertForTesting(remaining: Int) -> Int { Statements.rowsPerInsert(remaining: remaining) }

    /// Bytes SQLite holds for the connection's prepared statements and its page cache
    /// (`SQLITE_DBSTATUS_STMT_USED`, `SQLITE_DBSTATUS_CACHE_USED`): tests of the store's memory.
    func memoryUsed() -> (statements: Int, pageCache: Int) {
        guard let db = database?.handle else { return (0, 0) }
        var statements: Int32 = 0, cache: Int32 = 0, highwater: Int32 = 0
        sqlite3_db_status(db, SQLITE_DBSTATUS_STMT_USED, &statements, &highwater, 0)
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_USED, &cache, &highwater, 0)
        return (Int(statements), Int(cache))
    }

    private static func migrate(_ database: SQLiteDatabase, migrations: [String], progress: ((Int) -> Void)?,
                                interval: Double) throws(StoreError) {
        let operation = "migrating the schema"
        let version = try database.integer("PRAGMA user_version", operation: operation)
        guard version <= Int64(migrations.count) else {
            throw StoreError(code: .schema, path: database.path, operation: operation,
                             message: "the database has schema version \(version) but this ccsd knows versions up to "
                                + "\(migrations.count): it was written by a newer ccsd")
        }
        for next in Int(version)..<migrations.count {
            try database.execute("BEGIN IMMEDIATE", operation: operation)
            do throws(StoreError) {
                // A new database (version 0) is created, not migrated: nothing to report.
                if let progress, version > 0 {
                    progress(next + 1)
                    let ticker = MigrationTicker(version: next + 1, interval: interval, report: progress)
                    try ticker.whileRunning(on: database) { () throws(StoreError) in
                        try database.execute(migrations[next], operation: operation)
                    }
                } else {
                    try database.execute(migrations[next], operation: operation)
                }
                try database.execute("PRAGMA user_version = \(next + 1)", operation: operation)
                try database.execute("COMMIT", operation: operation)
            } catch {
                if database.isInTransaction { try? database.execute("ROLLBACK", operation: operation) }
                throw error
            }
        }
    }

    /// Calls `report` about every `interval` seconds while SQLite runs a migration, from SQLite's progress
    /// handler (every 10,000 virtual machine steps, a look at `ContinuousClock`).
    private final class MigrationTicker {
        let version: Int
        let report: (Int) -> Void
        private let interval: Duration
        private var last = ContinuousClock.now

        init(version: Int, interval: Double, report: @escaping (Int) -> Void) {
            self.version = version
            self.report = report
            self.interval = .seconds(max(0, interval))
        }

        func tick() {
            let now = ContinuousClock.now
            guard now - last >= interval else { return }
            last = now
            report(version)
        }

        /// Runs `body` with this ticker as the connection's progress handler (removed afterwards).
        func whileRunning(on database: SQLiteDatabase, _ body: () throws(StoreError) -> Void) throws(StoreError) {
            guard let db = database.handle else { return try body() }
            let context = Unmanaged.passUnretained(self).toOpaque()
            sqlite3_progress_handler(db, 10_000, { context in
                context.map { Unmanaged<MigrationTicker>.fromOpaque($0).takeUnretainedValue().tick() }
                return 0  // go on
            }, context)
            defer { sqlite3_progress_handler(db, 0, nil, nil) }
            try withExtendedLifetime(self) { () throws(StoreError) in try body() }
        }
    }

    /// Reads the live messages' ids and accept_seqs (from the committed live floor on) into `live`.
    private func rebuildLive(_ s: Statements) throws(StoreError) {
        let operation = "reading the live messages"
        live.removeAll()
        s.selectLiveIDs.bind(1, liveFloor)
        defer { s.selectLiveIDs.reset() }
        while try s.selectLiveIDs.step(operation: operation) {
            let messageID = s.selectLiveIDs.text(1)
            live.insert(messageID, hash: SlotIndex.hash(messageID), acceptSeq: s.selectLiveIDs.int64(0),
                        acceptedAt: s.selectLiveIDs.int64(2))
        }
        liveIsStale = false
    }

    private func open(_ operation: String) throws(StoreError) -> (SQLiteDatabase, Statements) {
        guard let database, let statements else {
            throw StoreError(code: .other, path: databasePath, operation: operation, message: "the store is closed")
        }
        return (database, statements)
    }

    /// The value of an integer pragma on this connection (tests: `synchronous`, `user_version`).
    func pragma(_ name: String) throws(StoreError) -> Int64 { try integer("PRAGMA \(name)") }

    /// Runs a query returning one integer on the store's connection (tests, diagnostics).
    func integer(_ sql: String) throws(StoreError) -> Int64 {
        try open("running a query").0.integer(sql, operation: "running a query")
    }

    /// Runs a query returning one text on the store's connection (tests, diagnostics).
    func text(_ sql: String) throws(StoreError) -> String? {
        try open("running a query").0.text(sql, operation: "running a query")
    }

    /// Runs SQL on the store's connection (tests).
    func execute(_ sql: String) throws(StoreError) {
        try open("running a statement").0.execute(sql, operation: "running a statement")
    }

    // MARK: - MessageStore

    public func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot {
        let operation = "loading stored messages"
        let (_, s) = try open(operation)
        var records: [MessageRecord] = []
        // The writer's live set is filled from the same rows (one read of them at start, not two).
        live.removeAll()
        liveIsStale = true
        s.selectLive.bind(1, liveFloor)
        defer { s.selectLive.reset() }
        while try s.selectLive.step(operation: operation) {
            let acceptedAt = s.selectLive.int64(4)
            var record = MessageRecord(messageID: s.selectLive.text(0), json: s.selectLive.text(1),
                                       to: s.selectLive.text(2), rateKey: s.selectLive.text(3),
                                       acceptedAt: Double(acceptedAt) / 1000, acceptedAtUnixMillis: acceptedAt,
                                       timeToLive: Int(s.selectLive.int64(5)))
            record.attempts = Int(s.selectLive.int64(6))
            record.sends = Int(s.selectLive.int64(7))
            record.lastError = s.selectLive.optionalText(8)
            live.insert(record.messageID, hash: record.messageIDHash, acceptSeq: s.selectLive.int64(9),
                        acceptedAt: acceptedAt)
            records.append(record)
        }
        liveIsStale = false
        var handedOver: [HandedOverMessage] = []
        s.selectHandedOver.bind(1, nowUnixMillis - configuration.dedupeWindowMillis)
        defer { s.selectHandedOver.reset() }
        while try s.selectHandedOver.step(operation: operation) {
            handedOver.append(HandedOverMessage(messageID: s.selectHandedOver.text(0),
                                                atUnixMillis: s.selectHandedOver.int64(1)))
        }
        return StoreSnapshot(live: records, handedOver: handedOver, lastSeq: lastSeq)
    }

    public func commit(_ batch: StoreBatch, nowUnixMillis now: Int64) throws(StoreError) -> StoreCommitResult {
        let operation = "committing a batch"
        let (database, s) = try open(operation)
        if liveIsStale { try rebuildLive(s) }
        // Worked on as a local (`live`'s storage, swapped out for the commit): each access to the stored
        // property paid a dynamic exclusivity check.
        var live = SQLiteLiveMessages()
        swap(&live, &self.live)
        defer { swap(&live, &self.live) }
        try s.begin.run(operation: operation)
        var seq = lastSeq
        do throws(StoreError) {
            var result = StoreCommitResult()
            // The operations are read through a buffer pointer: a `switch` on an array element copied each
            // payload (a retain and a release of each of its texts); through the pointer most are read in place
            // (a final record's payload is still copied: docs/performance.md, "Ninth round").
            try batch.operations.withUnsafeBufferPointer { (operations) throws(StoreError) in
                let partners = SQLiteMessageStore.progressCarriedByFinals(batch, operations)
                try apply(operations, partners: partners, seq: &seq, now: now, statements: s, live: &live, result: &result)
            }
            for (consumer, cursor) in batch.eventCursors.sorted(by: { $0.key < $1.key }) {
                s.upsertCursor.bind(1, consumer)
                s.upsertCursor.bind(2, cursor)
                try s.upsertCursor.run(operation: operation)
            }
            if batch.isEmpty {
                s.probe.bind(1, now)
                try s.probe.run(operation: operation)
            }
            try writeJournal(result.journaled, statements: s)
            try prune(now: now, lastSeq: seq, statements: s)
            let floor = live.floor(next: seq + 1)
            let finalsFloor = finalsPruning.floor
            if seq != lastSeq || floor != liveFloor || finalsFloor != pruneFloor {
                s.updateState.bind(1, seq)
                s.updateState.bind(2, floor)
                s.updateState.bind(3, finalsFloor)
                try s.updateState.run(operation: operation)
            }
            try s.commit.run(operation: operation)
            lastSeq = seq
            liveFloor = floor
            pruneFloor = finalsFloor
            return result
        } catch {
            if database.isInTransaction { try? s.rollback.run(operation: operation) }
            // The commit's changes to the live set and the pruning walk were rolled back with it: the live set
            // is rebuilt before the next commit, the walk restarts from the committed floor.
            live.removeAll()
            liveIsStale = true
            finalsPruning = SQLiteFinalsPruning(floor: pruneFloor)
            throw error
        }
    }

    /// Writes a batch's operations in order (inside `commit`'s transaction); `partners` as
    /// `progressCarriedByFinals` gives them.
    private func apply(_ operations: UnsafeBufferPointer<StoreBatch.Operation>, partners: [Int32]?, seq: inout Int64,
                       now: Int64, statements s: Statements, live: inout SQLiteLiveMessages,
                       result: inout StoreCommitResult) throws(StoreError) {
        let operation = "committing a batch"
        // Finals of live messages, written together by multi-row INSERTs (`writeFinals`): before any insert
        // (which reads `finals` when its message_id is taken), before a final of a message not live (the
        // same), and at the end.
        var finals: [PendingFinal] = []
        var index = 0
        while index < operations.count {
            defer { index += 1 }
            switch operations[index] {
            case .insert:
                try writeFinals(&finals, operations, partners: partners, now: now, statements: s)
                // A run of inserts goes in by multi-row INSERTs when none of its message_ids is taken (the
                // common case); otherwise, or alone, one by one.
                var end = index + 1
                while end < operations.count, case .insert = operations[end] { end += 1 }
                var start = index
                while end - start >= 2 {
                    let chunk = start..<start + Statements.rowsPerInsert(remaining: end - start)
                    guard try insertAll(operations, chunk, seq: &seq, now: now, statements: s, live: &live,
                                        result: &result) else { break }
                    start = chunk.upperBound
                }
                index = end - 1
                guard start < end else { continue }
                for position in start..<end {
                    guard case .insert(let insert) = operations[position] else { continue }
                    let outcome = try self.insert(insert, seq: &seq, now: now, statements: s, live: &live, result: &result)
                    result.persisted.append(PersistResult(messageID: insert.record.messageID, line: insert.line,
                                                          outcome: outcome))
                }
            case .progress:
                if let partners, partners[index] >= 0 { continue }  // written by its final record's update
                guard case .progress(let record) = operations[index] else { continue }
                // Only a live message's progress is kept (a final one's row no longer changes).
                guard let found = live.find(record.messageID, hash: record.messageIDHash) else { continue }
                s.updateProgress.bind(1, record.attempts)
                s.updateProgress.bind(2, record.sends)
                s.updateProgress.bind(3, record.lastError)
                s.updateProgress.bind(4, found.acceptSeq)
                try s.updateProgress.run(operation: operation)
            case .record(let record):
                try self.record(record, at: index, operations, partners: partners, seq: &seq, now: now, statements: s,
                                live: &live, finals: &finals, result: &result)
            }
        }
        try writeFinals(&finals, operations, partners: partners, now: now, statements: s)
    }

    /// A final waiting in `apply` for its row: the index of its record in the batch's operations, and its
    /// message's accept_seq and accept time.
    private struct PendingFinal {
        var operation: Int
        var acceptSeq: Int64
        var acceptedAt: Int64
    }

    /// Writes `finals` by multi-row INSERTs into `finals` (the largest power of two of rows at a time, as the
    /// message inserts), each row with its record's event and the progress the record carries (`partners`),
    /// and empties it. One statement per 64 finals instead of one each took about 3,200 instructions per
    /// message off (SQLite's cost per statement: opening the table's cursor, the program, halting).
    private func writeFinals(_ finals: inout [PendingFinal], _ operations: UnsafeBufferPointer<StoreBatch.Operation>,
                             partners: [Int32]?, now: Int64, statements s: Statements) throws(StoreError) {
        guard !finals.isEmpty else { return }
        // A final the pruning walk already passed (its message accepted before the retention), or one stamped
        // before its message's accept time (the clock stepped back between them), waits for it there.
        let walked = finalsPruning.cursor
        for final in finals where final.acceptSeq < walked || final.acceptedAt > now {
            finalsPruning.wrote(acceptSeq: final.acceptSeq, finalAt: now, acceptedAt: final.acceptedAt)
        }
        var arena = SQLiteTextArena()
        swap(&arena, &texts)
        defer { swap(&arena, &texts) }
        var start = 0
        while start < finals.count {
            let rows = Statements.rowsPerInsert(remaining: finals.count - start)
            let statement = try s.insertFinals(rows: rows)
            arena.removeAll()
            for row in 0..<rows {
                let final = finals[start + row]
                let first = Int32(row) * Statements.finalColumns + 1
                statement.bind(first, final.acceptSeq)
                // The event's bytes as the batch holds them (the two plain events from their pieces), copied once.
                if case .record(let record) = operations[final.operation] {
                    record.text.withUTF8 { arena.append(first + 1, bytes: $0) }
                }
                statement.bind(first + 2, now)
                if let partners, partners[final.operation] >= 0,
                   let progress = operations[Int(partners[final.operation])].progressFields {
                    statement.bind(first + 3, progress.attempts)
                    statement.bind(first + 4, progress.sends)
                    statement.bind(first + 5, progress.lastError)
                }
            }
            try arena.withBound(to: statement) { () throws(StoreError) in
                try statement.stepToEnd(operation: "committing a batch")
            }
            start += rows
        }
        finals.removeAll(keepingCapacity: true)
    }

    private func insert(_ insert: StoreBatch.Insert, seq: inout Int64, now: Int64, statements s: Statements,
                        live: inout SQLiteLiveMessages, result: inout StoreCommitResult) throws(StoreError) -> PersistOutcome {
        let operation = "committing a batch"
        // The common case costs one statement: the insert is ignored when the message_id is taken.
        if try insertRow(insert, acceptSeq: seq + 1, statements: s) {
            seq += 1
            live.insert(insert.record.messageID, hash: insert.record.messageIDHash, acceptSeq: seq,
                        acceptedAt: insert.record.acceptedAtUnixMillis)
            journal(seq: seq, time: now, text: insert.acceptedText, result: &result)
            return .stored
        }
        s.selectMessage.bind(1, insert.record.messageID)
        guard try s.selectMessage.step(operation: operation) else {
            s.selectMessage.reset()
            throw StoreError(code: .other, path: databasePath, operation: operation,
                             message: "message_id \(insert.record.messageID) was neither inserted nor found")
        }
        let acceptSeq = s.selectMessage.int64(0)
        let finalEvent = s.selectMessage.optionalText(1)
        let finalAt = s.selectMessage.int64(2)
        s.selectMessage.reset()
        guard let finalEvent else { return .duplicateLive }
        if finalAt >= now - configuration.finalRetentionMillis { return .duplicateFinal(outcome: finalEvent) }
        // Final and past its retention, only not pruned yet: the message_id is free again.
        try deleteMessage(acceptSeq: acceptSeq, statements: s)
        _ = try insertRow(insert, acceptSeq: seq + 1, statements: s)
        seq += 1
        live.insert(insert.record.messageID, hash: insert.record.messageIDHash, acceptSeq: seq,
                        acceptedAt: insert.record.acceptedAtUnixMillis)
        journal(seq: seq, time: now, text: insert.acceptedText, result: &result)
        return .stored
    }

    /// Deletes a final message's row and its final (both keyed by its accept_seq).
    private func deleteMessage(acceptSeq: Int64, statements s: Statements,
                               operation: String = "committing a batch") throws(StoreError) {
        s.deleteMessage.bind(1, acceptSeq)
        try s.deleteMessage.run(operation: operation)
        s.deleteFinal.bind(1, acceptSeq)
        try s.deleteFinal.run(operation: operation)
    }

    /// Inserts the messages of `chunk` (inserts only, at least 2) by one multi-row `INSERT OR IGNORE`, with the
    /// accept seqs and `accepted` events they get one by one: true when every row went in. When a message_id was
    /// taken (stored, or twice in the chunk), the statement is undone (a savepoint) and nothing is journaled:
    /// false, and the caller inserts them one by one (`insert`), which tells each outcome. One statement instead
    /// of one per message: SQLite's cost per statement (opening the table's and its indexes' cursors, the
    /// constraint program, halting) was about 5,000 instructions.
    private func insertAll(_ operations: UnsafeBufferPointer<StoreBatch.Operation>, _ chunk: Range<Int>, seq: inout Int64, now: Int64,
                           statements s: Statements, live: inout SQLiteLiveMessages,
                           result: inout StoreCommitResult) throws(StoreError) -> Bool {
        let operation = "committing a batch"
        let statement = try s.insertMessages(rows: chunk.count)
        var parameter: Int32 = 1
        var acceptSeq = seq
        // Filled as a local (`texts`' storage, swapped out for the call): appending to the stored property
        // paid a dynamic exclusivity check per text.
        var arena = SQLiteTextArena()
        swap(&arena, &texts)
        defer { swap(&arena, &texts) }
        arena.removeAll()
        for position in chunk {
            guard case .insert(let insert) = operations[position] else { continue }
            acceptSeq += 1
            SQLiteMessageStore.bindMessageRow(insert.record, acceptSeq: acceptSeq, from: parameter, to: statement,
                                              texts: &arena)
            parameter += Statements.messageColumns
        }
        try s.savepoint.run(operation: operation)
        try arena.withBound(to: statement) { () throws(StoreError) in try statement.stepToEnd(operation: operation) }
        guard s.database.changes == Int32(chunk.count) else {
            try s.rollbackToSavepoint.run(operation: operation)
            try s.releaseSavepoint.run(operation: operation)
            return false
        }
        try s.releaseSavepoint.run(operation: operation)
        for position in chunk {
            guard case .insert(let insert) = operations[position] else { continue }
            seq += 1
            live.insert(insert.record.messageID, hash: insert.record.messageIDHash, acceptSeq: seq,
                        acceptedAt: insert.record.acceptedAtUnixMillis)
            journal(seq: seq, time: now, text: insert.acceptedText, result: &result)
            result.persisted.append(PersistResult(messageID: insert.record.messageID, line: insert.line, outcome: .stored))
        }
        return true
    }

    /// `INSERT OR IGNORE` of a message row (the one-row case of `insertMessages`); true when the row went in.
    private func insertRow(_ insert: StoreBatch.Insert, acceptSeq: Int64, statements s: Statements) throws(StoreError) -> Bool {
        let statement = try s.insertMessages(rows: 1)
        texts.removeAll()
        SQLiteMessageStore.bindMessageRow(insert.record, acceptSeq: acceptSeq, from: 1, to: statement, texts: &texts)
        try texts.withBound(to: statement) { () throws(StoreError) in try statement.stepToEnd(operation: "committing a batch") }
        return s.database.changes == 1
    }

    /// Binds one row of `insertMessages` (`Statements.messageColumns` parameters from `first`); its texts go
    /// into `texts` (the JSON as the record's bytes, with no `String` made), bound by the caller's
    /// `texts.withBound`.
    private static func bindMessageRow(_ record: MessageRecord, acceptSeq: Int64, from first: Int32, to statement: SQLiteStatement,
                                       texts: inout SQLiteTextArena) {
        texts.append(first, record.messageID)
        statement.bind(first + 1, acceptSeq)
        texts.append(first + 2, utf8: record.jsonUTF8)
        texts.append(first + 3, record.to)
        // Left NULL when the same as the target (always, from ccsd's intake; every run ends by clearing the
        // bindings): a text less to bind and to store.
        if record.rateKey != record.to { texts.append(first + 4, record.rateKey) }
        statement.bind(first + 5, record.acceptedAtUnixMillis)
        statement.bind(first + 6, record.timeToLive)
        statement.bind(first + 7, record.attempts)
        statement.bind(first + 8, record.sends)
        if let lastError = record.lastError { texts.append(first + 9, lastError) } else { statement.bind(first + 9, nil) }
    }

    /// Which progress operations a final record of the same message later in the batch writes with its own
    /// update (`markFinalWithProgress`), saving a statement per message whose last send and ack commit
    /// together (the common case under load). Nil when the batch has no progress; otherwise, for each operation
    /// index: a progress operation's carrying record, a record's carried progress, or -1.
    ///
    /// The same state results as with the progress update first: both apply only to a live message (one
    /// without a finals row), and nothing between them changes that — the carrier is the *first* final record
    /// of the message after the progress, and an insert of the same message_id in between (which may delete and
    /// re-insert a final message past its retention) rules the fold out. The carried progress goes into the
    /// finals row; `storedMessage` reads it from there.
    static func progressCarriedByFinals(_ batch: StoreBatch, _ operations: UnsafeBufferPointer<StoreBatch.Operation>) -> [Int32]? {
        guard batch.hasProgress else { return nil }
        let blocked: Int32 = -2
        var partners = [Int32](repeating: -1, count: operations.count)
        for index in operations.indices {
            // Each message_id's hash as its record carries it (hashed once, when the record was made).
            let messageID: String
            let hash: UInt32
            switch operations[index] {
            case .insert(let insert):
                messageID = insert.record.messageID
                hash = insert.record.messageIDHash
            case .record(let record):
                guard let id = record.finalMessageID, let idHash = record.finalMessageIDHash else { continue }
                messageID = id
                hash = idHash
            case .progress: continue
            }
            guard let progress = batch.progressOperationIndex(of: messageID, hash: hash), progress < index,
                  partners[progress] == -1 else { continue }
            if case .record = operations[index] {
                partners[progress] = Int32(index)
                partners[index] = Int32(progress)
            } else {
                partners[progress] = blocked
            }
        }
        return partners
    }

    /// Journals `record` (operation `index` of the batch). When it ends a live message, its final row is queued in
    /// `finals` (`writeFinals` writes it, with the progress the record carries). When the message is not live,
    /// a select (after the queued finals are written) tells an already final message (the record is not
    /// journaled) from an unknown one (journaled, nothing marked).
    private func record(_ record: StoreBatch.Record, at index: Int, _ operations: UnsafeBufferPointer<StoreBatch.Operation>,
                        partners: [Int32]?, seq: inout Int64, now: Int64, statements s: Statements,
                        live: inout SQLiteLiveMessages, finals: inout [PendingFinal],
                        result: inout StoreCommitResult) throws(StoreError) {
        let operation = "committing a batch"
        result.recordedThrough = max(result.recordedThrough ?? record.id, record.id)
        if let messageID = record.finalMessageID, let hash = record.finalMessageIDHash {
            if let found = live.find(messageID, hash: hash) {
                live.remove(slot: found.slot)
                finals.append(PendingFinal(operation: index, acceptSeq: found.acceptSeq, acceptedAt: found.acceptedAt))
            } else {
                try writeFinals(&finals, operations, partners: partners, now: now, statements: s)
                s.selectMessage.bind(1, messageID)
                let stored = try s.selectMessage.step(operation: operation)
                let alreadyFinal = stored && !s.selectMessage.isNull(1)
                let acceptSeq = stored ? s.selectMessage.int64(0) : -1
                let acceptedAt = stored ? s.selectMessage.int64(3) : 0
                s.selectMessage.reset()
                if alreadyFinal {
                    result.duplicateFinalRecords.append(record.id)
                    return
                }
                // Stored and live, although the live set did not hold it: marked final all the same.
                if stored { finals.append(PendingFinal(operation: index, acceptSeq: acceptSeq, acceptedAt: acceptedAt)) }
            }
        }
        if let messageID = record.handedOverMessageID {
            s.upsertHandedOver.bind(1, messageID)
            s.upsertHandedOver.bind(2, now)
            try s.upsertHandedOver.run(operation: operation)
        }
        seq += 1
        journal(seq: seq, time: now, text: record.text, result: &result)
    }

    /// Gives an event its seq; the blocks are written by `writeJournal` before the commit's pruning, in the same
    /// transaction (nothing in between reads the events table).
    /// The text stays as it came (`EventText`: the two plain events as pieces, no `String` made).
    private func journal(seq: Int64, time: Int64, text: EventText, result: inout StoreCommitResult) {
        result.journaled.append(JournaledEvent(seq: seq, timeUnixMillis: time, text: text))
    }

    /// Events per row of `event_blocks` at most: bounds what cutting a block's head (pruning part of a block)
    /// rewrites. A flood commits about 350 events per commit: two blocks.
    static let eventsPerBlock = 256

    /// Writes a commit's events as blocks (`event_blocks`, schema version 2): runs of consecutive seqs with
    /// one time, at most `eventsPerBlock` each, whose lines are joined by line feeds; a line that contains a
    /// line feed ends its block (only a block's last line may contain one, so splitting stays exact). One row
    /// per block instead of one per event: a row costs SQLite about 2,500 instructions to insert and as many
    /// to prune.
    private func writeJournal(_ events: [JournaledEvent], statements s: Statements) throws(StoreError) {
        try events.withUnsafeBufferPointer { (events) throws(StoreError) in try writeJournal(events, statements: s) }
    }

    /// `writeJournal` over the events in place: an event taken out of the array by value was copied (a retain
    /// and a release of each of its pieces).
    private func writeJournal(_ events: UnsafeBufferPointer<JournaledEvent>, statements s: Statements) throws(StoreError) {
        let operation = "committing a batch"
        // The text is built in a local array (`blockText`'s storage, swapped out for the call): appending to
        // the stored property paid a dynamic exclusivity check per access, two per event.
        var text: [UInt8] = []
        swap(&text, &blockText)
        defer { swap(&text, &blockText) }
        var start = 0
        while start < events.count {
            text.removeAll(keepingCapacity: true)
            var end = start
            while end < events.count {
                if end > start {
                    guard end - start < SQLiteMessageStore.eventsPerBlock, events[end].seq == events[end - 1].seq + 1,
                          events[end].timeUnixMillis == events[start].timeUnixMillis else { break }
                    text.append(0x0A)
                }
                // Written from the event's pieces for the two plain events (which hold no line feed).
                let isPlainEvent = events[end].text.isPlainEvent
                let endsBlock = events[end].text.withUTF8 { bytes in
                    text.append(contentsOf: bytes)
                    return !isPlainEvent && bytes.baseAddress.map { memchr($0, 0x0A, bytes.count) != nil } ?? false
                }
                end += 1
                if endsBlock { break }
            }
            s.insertBlock.bind(1, events[start].seq)
            s.insertBlock.bind(2, events[end - 1].seq)
            s.insertBlock.bind(3, events[start].timeUnixMillis)
            try text.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try s.insertBlock.run(binding: 4, utf8: bytes, operation: operation)
            }
            start = end
        }
    }

    /// Bounded pruning inside the commit's transaction (see `StoreConfiguration`).
    private func prune(now: Int64, lastSeq: Int64, statements s: Statements) throws(StoreError) {
        let operation = "pruning"
        let limit = configuration.pruneLimitPerCommit
        try pruneFinalMessages(now: now, limit: limit, statements: s)
        s.pruneHandedOver.bind(1, now - configuration.dedupeWindowMillis)
        s.pruneHandedOver.bind(2, limit)
        try s.pruneHandedOver.run(operation: operation)

        // Events: only when the oldest qualifies, then those of the `limit` seqs from the oldest on that qualify
        // (acknowledged by every consumer, or older than the retention). The rule is per event, as when each had
        // its row; within a block (one time) the events that qualify are a head of it, cut off by rewriting the
        // block from its first kept event, or the whole block, deleted.
        guard try s.oldestBlock.step(operation: operation) else {
            s.oldestBlock.reset()
            return
        }
        let oldestSeq = s.oldestBlock.int64(0)
        let oldestTime = s.oldestBlock.int64(1)
        s.oldestBlock.reset()
        var acknowledged: Int64 = 0  // with no registered consumer, only the age limit prunes
        if try s.minCursor.step(operation: operation), !s.minCursor.isNull(0) {
            acknowledged = s.minCursor.int64(0)
        }
        s.minCursor.reset()
        let cutoff = now - configuration.eventsRetentionMillis
        guard oldestSeq <= acknowledged || oldestTime < cutoff else { return }
        let windowEnd = oldestSeq + Int64(limit)  // seqs below it are considered
        var heads: [(first: Int64, last: Int64, through: Int64)] = []
        s.blocksBefore.bind(1, windowEnd)
        defer { s.blocksBefore.reset() }
        while try s.blocksBefore.step(operation: operation) {
            let first = s.blocksBefore.int64(0), last = s.blocksBefore.int64(1)
            let through = min(last, windowEnd - 1, s.blocksBefore.int64(2) < cutoff ? last : acknowledged)
            if through >= first { heads.append((first, last, through)) }
        }
        s.blocksBefore.reset()
        for head in heads {
            if head.through == head.last {
                s.deleteBlock.bind(1, head.first)
                try s.deleteBlock.run(operation: operation)
            } else {
                try cutBlock(head.first, before: head.through + 1, statements: s)
            }
        }
    }

    /// Deletes at most `limit` final messages whose final is older than `now` less the retention (ms since
    /// 1970): those waiting in `finalsPruning` first, then those the walk meets in the runs it stepped over
    /// whose time has come and from its cursor on (at most `limit` looked at each), up to the first message
    /// accepted within the retention. In a flood within the retention: one step of one query.
    private func pruneFinalMessages(now: Int64, limit: Int, statements s: Statements) throws(StoreError) {
        let retention = configuration.finalRetentionMillis
        let cutoff = now - retention
        var pruning = SQLiteFinalsPruning(floor: 0)
        swap(&pruning, &finalsPruning)
        defer { swap(&pruning, &finalsPruning) }
        var due = pruning.takeDue(before: cutoff, limit: limit)
        var index = pruning.skipped.count - 1
        while index >= 0, due.count < limit {
            let run = pruning.skipped[index]
            if run.notBefore <= now {
                switch try walkFinals(from: run.from, to: run.to, cutoff: cutoff, limit: limit, into: &due,
                                      pruning: &pruning, statements: s) {
                case .end: pruning.walkedSkipped(index, resumeAt: nil)
                case .budget(let next): pruning.walkedSkipped(index, resumeAt: next)
                case .stopped(let acceptSeq, let acceptedAt):
                    pruning.walkedSkipped(index, resumeAt: acceptSeq, notBefore: acceptedAt + retention)
                }
            }
            index -= 1
        }
        // The main walk; where it stops at a message accepted after now (the clock stepped back since), it steps
        // over the messages accepted after now and goes on from the first one accepted by now.
        while due.count < limit,
              case .stopped(let acceptSeq, let acceptedAt) = try walkFinals(
                  from: pruning.cursor, to: Int64.max, cutoff: cutoff, limit: limit, into: &due, pruning: &pruning,
                  statements: s),
              acceptedAt > now {
            s.firstAcceptedBy.bind(1, acceptSeq)
            s.firstAcceptedBy.bind(2, now)
            defer { s.firstAcceptedBy.reset() }
            guard try s.firstAcceptedBy.step(operation: "pruning") else { break }
            pruning.skip(from: acceptSeq, to: s.firstAcceptedBy.int64(0), firstAcceptedAt: acceptedAt,
                         retention: retention)
        }
        for acceptSeq in due { try deleteMessage(acceptSeq: acceptSeq, statements: s, operation: "pruning") }
    }

    /// How a walk of the finals ended: at the end of its range; out of budget (`limit` looked at, or `limit`
    /// due), to go on from `next`; or stopped by a message accepted within the retention.
    private enum WalkEnd {
        case end
        case budget(next: Int64)
        case stopped(acceptSeq: Int64, acceptedAt: Int64)
    }

    /// Walks the finals of accept_seqs [`from`, `to`) in order, at most `limit` looked at: a due one (final
    /// before `cutoff`) is added to `due` (until it holds `limit`), one not due waits in `pruning`, and the walk
    /// stops at the first one whose message was accepted at or after `cutoff`.
    private func walkFinals(from: Int64, to: Int64, cutoff: Int64, limit: Int, into due: inout [Int64],
                            pruning: inout SQLiteFinalsPruning, statements s: Statements) throws(StoreError) -> WalkEnd {
        s.walkFinals.bind(1, from)
        s.walkFinals.bind(2, to)
        s.walkFinals.bind(3, limit)
        defer { s.walkFinals.reset() }
        var looked = 0
        var next = from
        while due.count < limit, try s.walkFinals.step(operation: "pruning") {
            let acceptSeq = s.walkFinals.int64(0), finalAt = s.walkFinals.int64(1), acceptedAt = s.walkFinals.int64(2)
            guard acceptedAt < cutoff else { return .stopped(acceptSeq: acceptSeq, acceptedAt: acceptedAt) }
            pruning.passed(acceptSeq: acceptSeq, finalAt: finalAt, due: finalAt < cutoff)
            if finalAt < cutoff { due.append(acceptSeq) }
            looked += 1
            next = acceptSeq + 1
        }
        return looked < limit && due.count < limit ? .end : .budget(next: next)
    }

    /// Rewrites the block starting at `first` from seq `keep` on (`first < keep <=` its last seq): the lines
    /// before it are dropped (each of them ends with a line feed: only a block's last line may contain one).
    private func cutBlock(_ first: Int64, before keep: Int64, statements s: Statements) throws(StoreError) {
        let operation = "pruning"
        s.selectBlockLines.bind(1, first)
        defer { s.selectBlockLines.reset() }
        guard try s.selectBlockLines.step(operation: operation) else { return }
        let lines = s.selectBlockLines.utf8(0)
        var dropped: Int64 = 0
        var offset = 0
        while dropped < keep - first {
            guard let lineFeed = lines[offset...].firstIndex(of: 0x0A) else {
                throw blockError(first, operation: operation)
            }
            offset = lineFeed + 1
            dropped += 1
        }
        blockText.removeAll(keepingCapacity: true)
        blockText.append(contentsOf: UnsafeBufferPointer(rebasing: lines[offset...]))
        s.selectBlockLines.reset()
        s.cutBlock.bind(1, keep)
        s.cutBlock.bind(2, first)
        try blockText.withUnsafeBufferPointer { (bytes) throws(StoreError) in
            try s.cutBlock.run(binding: 3, utf8: bytes, operation: operation)
        }
    }

    private func blockError(_ first: Int64, operation: String) -> StoreError {
        StoreError(code: .corrupt, path: databasePath, operation: operation,
                   message: "the events block at seq \(first) has fewer lines than seqs")
    }

    public func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] {
        let operation = "reading the journal"
        let (_, s) = try open(operation)
        var events: [JournaledEvent] = []
        guard limit != 0 else { return events }  // a negative limit: no limit (as SQLite's LIMIT)
        s.selectEvents.bind(1, seq)
        defer { s.selectEvents.reset() }
        while try s.selectEvents.step(operation: operation) {
            let first = s.selectEvents.int64(0), last = s.selectEvents.int64(1), time = s.selectEvents.int64(2)
            let lines = s.selectEvents.utf8(3)
            var start = 0
            for eventSeq in first...max(first, last) {
                var end = lines.count
                if eventSeq < last {
                    guard let lineFeed = lines[start...].firstIndex(of: 0x0A) else { throw blockError(first, operation: operation) }
                    end = lineFeed
                }
                if eventSeq > seq {
                    events.append(JournaledEvent(seq: eventSeq, timeUnixMillis: time,
                                                 line: String(decoding: UnsafeBufferPointer(rebasing: lines[start..<end]),
                                                              as: UTF8.self)))
                    if events.count == limit { return events }
                }
                start = end + 1
            }
        }
        return events
    }

    public func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) {
        let operation = "acknowledging events"
        let (_, s) = try open(operation)
        s.upsertCursor.bind(1, consumer)
        s.upsertCursor.bind(2, seq)
        try s.upsertCursor.run(operation: operation)
    }

    public func cursor(of consumer: String) throws(StoreError) -> Int64? {
        let operation = "reading a consumer cursor"
        let (_, s) = try open(operation)
        s.selectCursor.bind(1, consumer)
        defer { s.selectCursor.reset() }
        return try s.selectCursor.step(operation: operation) ? s.selectCursor.int64(0) : nil
    }

    public func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? {
        let operation = "reading a message"
        let (database, _) = try open(operation)
        // A final's own progress when it carried one (its `attempts` not NULL), else the message row's.
        let statement = try database.prepare("""
            SELECT m.accepted_at_ms, coalesce(f.attempts, m.attempts),
                   CASE WHEN f.attempts IS NULL THEN m.last_error ELSE f.last_error END,
                   f.final_event, f.final_at_ms, coalesce(f.sends, m.sends)
            FROM messages m LEFT JOIN finals f ON f.accept_seq = m.accept_seq WHERE m.message_id = ?1
            """, operation: operation)
        defer { statement.finalize() }
        statement.bind(1, messageID)
        guard try statement.step(operation: operation) else { return nil }
        return StoredMessage(messageID: messageID, acceptedAtUnixMillis: statement.int64(0), attempts: Int(statement.int64(1)),
                             sends: Int(statement.int64(5)),
                             lastError: statement.optionalText(2), finalEvent: statement.optionalText(3),
                             finalAtUnixMillis: statement.isNull(4) ? 0 : statement.int64(4))
    }

    /// Every statement, prepared once after the migrations (a multi-row events INSERT when first needed).
    private final class Statements {
        let begin, commit, rollback: SQLiteStatement
        let selectMessage, deleteMessage, deleteFinal, updateProgress: SQLiteStatement
        let upsertHandedOver, updateState, probe: SQLiteStatement
        let walkFinals, firstAcceptedBy, pruneHandedOver, oldestBlock, minCursor, blocksBefore, deleteBlock, selectBlockLines, cutBlock: SQLiteStatement
        let insertBlock, savepoint, releaseSavepoint, rollbackToSavepoint: SQLiteStatement
        /// Most rows per multi-row messages INSERT: 10 parameters each, below SQLite's variable limit (999 before
        /// 3.32, 32,766 since).
        static let messagesPerInsert = 64
        static let messageColumns: Int32 = 10
        /// `INSERT OR IGNORE INTO messages … VALUES (…), (…)` for 2^k rows at index k, prepared when first needed.
        private var messageInserts: [SQLiteStatement?] = Array(repeating: nil, count: messagesPerInsert.trailingZeroBitCount + 1)
        /// Parameters per row of `insertFinals`.
        static let finalColumns: Int32 = 6
        /// `INSERT INTO finals … VALUES (…), (…)` for 2^k rows at index k, prepared when first needed.
        private var finalInserts: [SQLiteStatement?] = Array(repeating: nil, count: messagesPerInsert.trailingZeroBitCount + 1)

        /// The rows of the next multi-row INSERT for a run of `remaining` (≥ 1) inserts: the largest power of two
        /// up to `remaining` and `messagesPerInsert`. Only 7 statement sizes are ever prepared: one per row count
        /// took about 1 MB of SQLite's memory once a flood had met every count (`SQLITE_DBSTATUS_STMT_USED`:
        /// 1,023,202 bytes, about 490 per row of statement), for at most a statement more per set bit of the
        /// run's length.
        static func rowsPerInsert(remaining: Int) -> Int {
            let rows = min(remaining, messagesPerInsert)
            return 1 << (Int.bitWidth - 1 - rows.leadingZeroBitCount)
        }

        /// The multi-row INSERT of `rows` rows, a power of two up to `messagesPerInsert` (`rowsPerInsert`).
        func insertMessages(rows: Int) throws(StoreError) -> SQLiteStatement {
            try multiRowInsert("""
                INSERT OR IGNORE INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms,
                                                time_to_live, attempts, sends, last_error) VALUES
                """, rows: rows, columns: Int(Statements.messageColumns), cache: &messageInserts)
        }

        /// The multi-row INSERT of `rows` finals (a power of two up to `messagesPerInsert`): per row its
        /// message's accept_seq, the final event, its time, and the progress it carries (attempts, sends,
        /// last_error; NULL when none). A final is a narrow row appended to `finals` (schema version 3): the wide
        /// message row is not rewritten, and no index moves it from live to final.
        func insertFinals(rows: Int) throws(StoreError) -> SQLiteStatement {
            try multiRowInsert("""
                INSERT INTO finals (accept_seq, final_event, final_at_ms, attempts, sends, last_error) VALUES
                """, rows: rows, columns: Int(Statements.finalColumns), cache: &finalInserts)
        }

        /// `head` and `rows` rows of `columns` parameters each (?1, ?2, … row after row), prepared when first
        /// needed and kept in `cache` at index log2(`rows`).
        private func multiRowInsert(_ head: String, rows: Int, columns: Int,
                                    cache: inout [SQLiteStatement?]) throws(StoreError) -> SQLiteStatement {
            precondition(rows > 0 && rows <= Statements.messagesPerInsert && rows & (rows - 1) == 0,
                         "a multi-row INSERT of \(rows) rows")
            let slot = rows.trailingZeroBitCount
            if let statement = cache[slot] { return statement }
            let values = (0..<rows).map { row in
                "(" + (1...columns).map { "?\(row * columns + $0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
            let statement = try database.prepare(head + " " + values, operation: "preparing statements")
            cache[slot] = statement
            return statement
        }
        let selectLive, selectLiveIDs, selectHandedOver, selectEvents, upsertCursor, selectCursor: SQLiteStatement
        let database: SQLiteDatabase
        init(_ db: SQLiteDatabase) throws(StoreError) {
            database = db
            let op = "preparing statements"
            begin = try db.prepare("BEGIN IMMEDIATE", operation: op)
            commit = try db.prepare("COMMIT", operation: op)
            rollback = try db.prepare("ROLLBACK", operation: op)
            selectMessage = try db.prepare("""
                SELECT m.accept_seq, f.final_event, f.final_at_ms, m.accepted_at_ms FROM messages m
                LEFT JOIN finals f ON f.accept_seq = m.accept_seq WHERE m.message_id = ?1
                """, operation: op)
            deleteMessage = try db.prepare("DELETE FROM messages WHERE accept_seq = ?1", operation: op)
            deleteFinal = try db.prepare("DELETE FROM finals WHERE accept_seq = ?1", operation: op)
            updateProgress = try db.prepare(
                "UPDATE messages SET attempts = ?1, sends = ?2, last_error = ?3 WHERE accept_seq = ?4", operation: op)
            upsertHandedOver = try db.prepare(
                "INSERT OR REPLACE INTO handed_over (message_id, at_ms) VALUES (?1, ?2)", operation: op)
            updateState = try db.prepare(
                "UPDATE store_state SET last_seq = ?1, live_floor = ?2, prune_floor = ?3 WHERE id = 1", operation: op)
            probe = try db.prepare("UPDATE store_state SET probe_ms = ?1 WHERE id = 1", operation: op)
            // The pruning walk (`SQLiteFinalsPruning`): finals of accept_seqs [?1, ?2), with their message's
            // accept time, at most ?3.
            walkFinals = try db.prepare("""
                SELECT f.accept_seq, f.final_at_ms, coalesce(m.accepted_at_ms, f.final_at_ms)
                FROM finals f LEFT JOIN messages m ON m.accept_seq = f.accept_seq
                WHERE f.accept_seq >= ?1 AND f.accept_seq < ?2 ORDER BY f.accept_seq LIMIT ?3
                """, operation: op)
            // Where a run of messages accepted after now (the clock stepped back since) ends: the first after ?1
            // accepted by ?2.
            firstAcceptedBy = try db.prepare("""
                SELECT accept_seq FROM messages WHERE accept_seq > ?1 AND accepted_at_ms <= ?2
                ORDER BY accept_seq LIMIT 1
                """, operation: op)
            pruneHandedOver = try db.prepare("""
                DELETE FROM handed_over WHERE message_id IN (
                    SELECT message_id FROM handed_over WHERE at_ms < ?1 ORDER BY at_ms LIMIT ?2)
                """, operation: op)
            savepoint = try db.prepare("SAVEPOINT inserts", operation: op)
            releaseSavepoint = try db.prepare("RELEASE inserts", operation: op)
            rollbackToSavepoint = try db.prepare("ROLLBACK TO inserts", operation: op)
            insertBlock = try db.prepare(
                "INSERT INTO event_blocks (first_seq, last_seq, time_ms, lines) VALUES (?1, ?2, ?3, ?4)", operation: op)
            oldestBlock = try db.prepare("SELECT first_seq, time_ms FROM event_blocks ORDER BY first_seq LIMIT 1",
                                         operation: op)
            minCursor = try db.prepare("SELECT min(seq) FROM cursors", operation: op)
            blocksBefore = try db.prepare(
                "SELECT first_seq, last_seq, time_ms FROM event_blocks WHERE first_seq < ?1 ORDER BY first_seq", operation: op)
            deleteBlock = try db.prepare("DELETE FROM event_blocks WHERE first_seq = ?1", operation: op)
            selectBlockLines = try db.prepare("SELECT lines FROM event_blocks WHERE first_seq = ?1", operation: op)
            cutBlock = try db.prepare("UPDATE event_blocks SET first_seq = ?1, lines = ?3 WHERE first_seq = ?2", operation: op)
            // The live messages: from the live floor ?1 on, those without a final.
            selectLive = try db.prepare("""
                SELECT message_id, json, target, coalesce(rate_key, target), accepted_at_ms, time_to_live, attempts, sends,
                       last_error, accept_seq
                FROM messages m WHERE accept_seq >= ?1
                AND NOT EXISTS (SELECT 1 FROM finals f WHERE f.accept_seq = m.accept_seq) ORDER BY accept_seq
                """, operation: op)
            selectLiveIDs = try db.prepare("""
                SELECT accept_seq, message_id, accepted_at_ms FROM messages m WHERE accept_seq >= ?1
                AND NOT EXISTS (SELECT 1 FROM finals f WHERE f.accept_seq = m.accept_seq) ORDER BY accept_seq
                """, operation: op)
            selectHandedOver = try db.prepare(
                "SELECT message_id, at_ms FROM handed_over WHERE at_ms >= ?1 ORDER BY at_ms, message_id", operation: op)
            // From the block holding seq ?1 (the last starting at or before it) on; `events(after:)` skips the rest.
            selectEvents = try db.prepare("""
                SELECT first_seq, last_seq, time_ms, lines FROM event_blocks
                WHERE first_seq >= coalesce((SELECT max(first_seq) FROM event_blocks WHERE first_seq <= ?1), 0)
                ORDER BY first_seq
                """, operation: op)
            upsertCursor = try db.prepare("""
                INSERT INTO cursors (consumer, seq) VALUES (?1, ?2)
                ON CONFLICT (consumer) DO UPDATE SET seq = max(seq, excluded.seq)
                """, operation: op)
            selectCursor = try db.prepare("SELECT seq FROM cursors WHERE consumer = ?1", operation: op)
        }
    }
}

import CSQLite
import CSQLiteWALGather

/// One SQLite connection (`sqlite3 *`), with errors turned into `StoreError` at the boundary.
///
/// Not thread-safe: used by one thread at a time (the store writer's queue), so it is opened in
/// multi-thread mode (`SQLITE_OPEN_NOMUTEX`). Result codes are extended (`sqlite3_extended_result_codes`).
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?
    let path: String

    /// Opens (creating if missing) the database at `path`.
    /// - Throws: `StoreError` (`cannotOpen`, `readOnly`, …) naming `path`.
    init(path: String) throws(StoreError) {
        SQLiteDatabase.configureSQLite
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, SQLiteDatabase.vfsName)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw StoreError(code: StoreError.code(forSQLiteCode: rc), path: path, operation: "opening the database",
                             message: message, sqliteCode: rc)
        }
        sqlite3_extended_result_codes(db, 1)
        handle = db
    }

    deinit { close() }

    /// Process-wide settings, once, before the first connection opens (`sqlite3_config` must precede SQLite's
    /// initialization): memory statistics off, which took a global mutex around each of SQLite's allocations
    /// (about 5 % of the instructions per message with the durable store).
    ///
    /// Then the VFS that gathers a transaction's WAL writes into one write at its commit frame
    /// (`CSQLiteWALGather`): two `pwrite64` per WAL frame, about 100 per flood commit, became one per commit.
    /// The connection falls back to SQLite's default VFS if it could not be registered.
    private static let configureSQLite: Void = {
        _ = ccsd_sqlite_disable_memory_statistics()
        gatherRegistered = ccsd_wal_gather_register() == SQLITE_OK
    }()

    nonisolated(unsafe) private static var gatherRegistered = false

    /// The VFS name for `sqlite3_open_v2` (nil: SQLite's default).
    private static var vfsName: UnsafePointer<CChar>? {
        gatherRegistered ? ccsd_wal_gather_vfs_name() : nil
    }

    func close() {
        guard let handle else { return }
        // Statements are finalized by their owners first; `close_v2` defers the close if one was not.
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// The error for result code `rc` of the call that just failed on this connection.
    func error(_ rc: Int32, operation: String) -> StoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "the database is closed"
        return StoreError(code: StoreError.code(forSQLiteCode: rc), path: path, operation: operation,
                          message: message, sqliteCode: rc)
    }

    func openHandle(operation: String) throws(StoreError) -> OpaquePointer {
        guard let handle else {
            throw StoreError(code: .other, path: path, operation: operation, message: "the store is closed")
        }
        return handle
    }

    /// Runs SQL without results (pragmas, schema, transaction control).
    func execute(_ sql: String, operation: String) throws(StoreError) {
        let db = try openHandle(operation: operation)
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, operation: operation) }
    }

    /// Runs a query returning one integer (`PRAGMA user_version`).
    func integer(_ sql: String, operation: String) throws(StoreError) -> Int64 {
        let statement = try prepare(sql, operation: operation)
        defer { statement.finalize() }
        guard try statement.step(operation: operation) else { return 0 }
        return statement.int64(0)
    }

    /// Runs a query returning one text (`PRAGMA journal_mode`).
    func text(_ sql: String, operation: String) throws(StoreError) -> String? {
        let statement = try prepare(sql, operation: operation)
        defer { statement.finalize() }
        guard try statement.step(operation: operation) else { return nil }
        return statement.optionalText(0)
    }

    func prepare(_ sql: String, operation: String) throws(StoreError) -> SQLiteStatement {
        let db = try openHandle(operation: operation)
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, operation: operation) }
        return SQLiteStatement(handle: statement, database: self)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int32 { handle.map { sqlite3_changes($0) } ?? 0 }

    var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }
}

/// A prepared statement, reused: bind, step, reset. Text is bound with `SQLITE_TRANSIENT` (SQLite copies it),
/// so no Swift buffer must outlive the call.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    private unowned let database: SQLiteDatabase
    private static let transient = ccsd_sqlite_transient()

    init(handle: OpaquePointer, database: SQLiteDatabase) {
        self.handle = handle
        self.database = database
    }

    deinit { finalize() }

    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }

    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else {
            sqlite3_bind_null(handle, index)
            return
        }
        value.withUTF8 { bytes in
            // An empty buffer may have no base address, which SQLite would bind as NULL.
            let base = bytes.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(("" as StaticString).utf8Start)
            _ = sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                                  SQLiteStatement.transient)
        }
    }

    /// Binds `bytes` as UTF-8 text without a copy (`SQLITE_STATIC`), runs the statement to the end and resets
    /// it (clearing the bindings) before returning: SQLite reads the bytes only while `bytes` is valid.
    func run(binding index: Int32, utf8 bytes: UnsafeBufferPointer<UInt8>, operation: String) throws(StoreError) {
        // An empty buffer may have no base address, which SQLite would bind as NULL.
        let base = bytes.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(("" as StaticString).utf8Start)
        _ = sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
        try run(operation: operation)
    }

    /// Binds `count` bytes at `bytes` as UTF-8 text without a copy (`SQLITE_STATIC`): only through
    /// `SQLiteTextArena.withBound`, which keeps the bytes in place until the statement is reset.
    fileprivate func bindStatic(_ index: Int32, _ bytes: UnsafePointer<UInt8>, count: Int) {
        _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self), Int32(count), nil)
    }

    /// Steps once: true when a row is available, false when done.
    /// - Throws: `StoreError` with SQLite's message for the failing step (the statement is reset).
    func step(operation: String) throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(rc, operation: operation)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Steps to the end (a statement without result rows) and resets.
    func run(operation: String) throws(StoreError) {
        defer { reset() }
        while try step(operation: operation) {}
    }

    /// Steps to the end without resetting: inside `SQLiteTextArena.withBound`, which resets once afterwards.
    func stepToEnd(operation: String) throws(StoreError) {
        while try step(operation: operation) {}
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String { optionalText(column) ?? "" }

    /// The bytes of a text column of the current row, valid until the next step, reset or column call.
    func utf8(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let bytes = sqlite3_column_text(handle, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func optionalText(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
}

/// Text parameters of one statement execution copied into one buffer and bound from there without SQLite's
/// own copy (`SQLITE_STATIC`): `bind(_:_:)` with `SQLITE_TRANSIENT` cost SQLite an allocation, a copy and a
/// free per text (four texts per inserted message). Kept by its owner and reused (no allocation per call).
struct SQLiteTextArena {
    private var bytes: [UInt8] = []
    private var texts: [(parameter: Int32, start: Int, count: Int)] = []

    /// Forgets the texts of the last execution (keeps the storage).
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        texts.removeAll(keepingCapacity: true)
    }

    /// Copies `text` in, for parameter `parameter`.
    mutating func append(_ parameter: Int32, _ text: String) {
        var text = text
        let start = bytes.count
        text.withUTF8 { bytes.append(contentsOf: $0) }
        texts.append((parameter, start, bytes.count - start))
    }

    /// Copies `utf8` (valid UTF-8) in, for parameter `parameter`: no `String` made on the way.
    mutating func append(_ parameter: Int32, utf8: [UInt8]) {
        utf8.withUnsafeBufferPointer { append(parameter, bytes: $0) }
    }

    /// Copies `bytes` (valid UTF-8, only read during the call) in, for parameter `parameter`.
    mutating func append(_ parameter: Int32, bytes text: UnsafeBufferPointer<UInt8>) {
        let start = bytes.count
        bytes.append(contentsOf: text)
        texts.append((parameter, start, text.count))
    }

    /// Binds every text to `statement`, runs `body` (which steps it, without resetting: see
    /// `SQLiteStatement.stepToEnd`) while the bytes stay in place, and resets the statement (clearing its
    /// bindings) before the bytes may move.
    func withBound<R>(to statement: SQLiteStatement, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) -> R in
            defer { statement.reset() }
            // An empty buffer may have no base address, which SQLite would bind as NULL.
            let base = buffer.baseAddress ?? ("" as StaticString).utf8Start
            for text in texts { statement.bindStatic(text.parameter, base + text.start, count: text.count) }
            return try body()
        }
    }
}

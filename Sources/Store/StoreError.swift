import CSQLite

/// A store failure, as the operator sees it: what ccsd was doing, the path, and SQLite's own message.
///
/// `retryable` errors (disk full, database busy or locked by another connection) may pass: the writer
/// retries with backoff and intake rejects meanwhile. The others (corrupt file, not a database, I/O error,
/// read-only file system, cannot open, schema from a newer ccsd, directory in use) mean ccsd cannot keep what
/// it has: the daemon stops (exit 5).
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// SQLITE_FULL: the disk (or file system quota) is full. Retryable.
        case full
        /// SQLITE_BUSY / SQLITE_LOCKED: another connection holds the database. Retryable.
        case busy
        /// SQLITE_READONLY: the file or its file system cannot be written.
        case readOnly
        /// SQLITE_CORRUPT / SQLITE_NOTADB: the file is damaged or is not a SQLite database.
        case corrupt
        /// SQLITE_IOERR: the operating system failed a read, write or sync.
        case io
        /// SQLITE_CANTOPEN, or the state directory / lock file cannot be made or opened.
        case cannotOpen
        /// The database was written by a newer ccsd (its schema version is higher than this one knows).
        case schema
        /// Another process (a second ccsd) holds the state directory's lock.
        case directoryInUse
        /// The store was closed, or another SQLite failure.
        case other
    }

    public var code: Code
    /// The file concerned: the database, the lock file or the state directory.
    public var path: String
    /// What ccsd was doing, e.g. `committing a batch`.
    public var operation: String
    /// SQLite's message (`sqlite3_errmsg`) or the operating system's (`strerror`).
    public var message: String
    /// SQLite's extended result code, 0 when the error did not come from SQLite.
    public var sqliteCode: Int32

    public var retryable: Bool { code == .full || code == .busy }

    public init(code: Code, path: String, operation: String, message: String, sqliteCode: Int32 = 0) {
        self.code = code
        self.path = path
        self.operation = operation
        self.message = message
        self.sqliteCode = sqliteCode
    }

    /// `store /var/lib/ccsd/ccsd.sqlite3: committing a batch failed: database or disk is full (SQLITE_FULL)`.
    public var description: String {
        var text = "store \(path): \(operation) failed: \(message)"
        if sqliteCode != 0 { text += " (\(StoreError.name(ofSQLiteCode: sqliteCode)))" }
        return text
    }

    /// Classifies a SQLite result code (primary or extended).
    static func code(forSQLiteCode sqliteCode: Int32) -> Code {
        switch sqliteCode & 0xFF {
        case SQLITE_FULL: .full
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_READONLY: .readOnly
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        case SQLITE_IOERR: .io
        case SQLITE_CANTOPEN: .cannotOpen
        default: .other
        }
    }

    /// `SQLITE_FULL`; an extended code shows as `SQLITE_IOERR, extended code 778`.
    static func name(ofSQLiteCode sqliteCode: Int32) -> String {
        let primary = sqliteCode & 0xFF
        let name = switch primary {
        case SQLITE_ERROR: "SQLITE_ERROR"
        case SQLITE_PERM: "SQLITE_PERM"
        case SQLITE_BUSY: "SQLITE_BUSY"
        case SQLITE_LOCKED: "SQLITE_LOCKED"
        case SQLITE_NOMEM: "SQLITE_NOMEM"
        case SQLITE_READONLY: "SQLITE_READONLY"
        case SQLITE_IOERR: "SQLITE_IOERR"
        case SQLITE_CORRUPT: "SQLITE_CORRUPT"
        case SQLITE_FULL: "SQLITE_FULL"
        case SQLITE_CANTOPEN: "SQLITE_CANTOPEN"
        case SQLITE_PROTOCOL: "SQLITE_PROTOCOL"
        case SQLITE_SCHEMA: "SQLITE_SCHEMA"
        case SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT"
        case SQLITE_NOTADB: "SQLITE_NOTADB"
        default: "SQLite code \(primary)"
        }
        return primary == sqliteCode ? name : "\(name), extended code \(sqliteCode)"
    }
}

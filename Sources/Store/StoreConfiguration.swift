/// Retention and durability settings of a store (issue 8; defaults documented in docs/decisions.md).
public struct StoreConfiguration: Sendable, Equatable {
    /// How a commit reaches the disk: SQLite's `PRAGMA synchronous` in WAL mode.
    public enum Synchronous: String, Sendable, Equatable {
        /// The WAL is fsynced at every commit: a commit that returned (an `accepted` the submitter saw)
        /// survives a power cut or an OS crash, not only a killed process. The default.
        case full = "FULL"
        /// The WAL is fsynced only at checkpoints: a commit survives `kill -9` of ccsd (the OS still has
        /// the bytes), but the last commits may roll back after a power cut or an OS crash. The database
        /// is never corrupted either way.
        case normal = "NORMAL"
    }

    public var synchronous: Synchronous
    /// How long a final message is kept so that a resubmitted message_id is answered with its stored
    /// outcome (`duplicateFinal`). Milliseconds; default 86,400,000 (one day).
    public var finalRetentionMillis: Int64
    /// Events are kept until every registered consumer acknowledged them, and in any case at most this
    /// long. With no registered consumer they are kept this long. Milliseconds; default 7 days.
    public var eventsRetentionMillis: Int64
    /// How long a handed-over upstream message_id is remembered for dedupe. Milliseconds; default 600,000
    /// (like the dispatcher's `upstreamDedupeWindow`: duplicates are expected, ccs-protocol.md §3).
    public var dedupeWindowMillis: Int64
    /// At most this many rows per table are pruned by one commit, so pruning never makes one commit slow.
    public var pruneLimitPerCommit: Int
    /// How long SQLite waits for a lock held by another connection (an inspecting `sqlite3` shell) before
    /// a call fails with SQLITE_BUSY. Milliseconds; default 5,000.
    public var busyTimeoutMillis: Int32
    /// SQLite's page cache for the store's connection (`PRAGMA cache_size`), KiB; default 2,000 (SQLite's
    /// own). What a flood touches again and again is the right edge of each table and index and the rows of
    /// the live messages, so the daemon sizes it by its intake byte bound (`Configuration.storePageCacheKiB`).
    public var pageCacheKiB: Int

    public init(synchronous: Synchronous = .full,
                finalRetentionMillis: Int64 = 86_400_000,
                eventsRetentionMillis: Int64 = 7 * 86_400_000,
                dedupeWindowMillis: Int64 = 600_000,
                pruneLimitPerCommit: Int = 1000,
                busyTimeoutMillis: Int32 = 5000,
                pageCacheKiB: Int = 2000) {
        self.synchronous = synchronous
        self.finalRetentionMillis = finalRetentionMillis
        self.eventsRetentionMillis = eventsRetentionMillis
        self.dedupeWindowMillis = dedupeWindowMillis
        self.pruneLimitPerCommit = pruneLimitPerCommit
        self.busyTimeoutMillis = busyTimeoutMillis
        self.pageCacheKiB = pageCacheKiB
    }
}

/// The database schema as an ordered list of migrations; `PRAGMA user_version` is the number applied.
///
/// A new version appends a migration (never edits a shipped one). Opening a database whose version is
/// higher than `migrations.count` (written by a newer ccsd) is refused with `StoreError.schema`, not
/// guessed at. Each migration runs in its own transaction with the version bump.
enum SQLiteSchema {
    static let migrations: [String] = [
        // 1: messages, the events journal, upstream dedupe, consumer cursors.
        """
        CREATE TABLE messages (
            message_id     TEXT PRIMARY KEY,
            accept_seq     INTEGER NOT NULL,   -- seq of its `accepted` event: the accept order
            json           TEXT NOT NULL,      -- the legacy XMPP JSON sent inside <gcm> (ccs-protocol.md §3)
            target         TEXT NOT NULL,
            rate_key       TEXT NOT NULL,
            accepted_at_ms INTEGER NOT NULL,   -- wall clock at intake, ms since 1970: the time_to_live clock
            time_to_live   INTEGER NOT NULL,   -- seconds
            attempts       INTEGER NOT NULL DEFAULT 0,
            sends          INTEGER NOT NULL DEFAULT 0,
            last_error     TEXT,
            final_event    TEXT,               -- NULL while live; the final event's JSON once final
            final_at_ms    INTEGER
        );
        CREATE INDEX messages_live ON messages(accept_seq) WHERE final_event IS NULL;
        CREATE INDEX messages_final ON messages(final_at_ms) WHERE final_event IS NOT NULL;
        CREATE TABLE events (
            seq     INTEGER PRIMARY KEY,       -- given by the store, increasing, never reused
            time_ms INTEGER NOT NULL,          -- wall clock, ms since 1970
            line    TEXT NOT NULL              -- the event's JSON object, without seq and time
        );
        CREATE TABLE handed_over (
            message_id TEXT PRIMARY KEY,       -- upstream message or receipt whose event was written
            at_ms      INTEGER NOT NULL
        );
        CREATE INDEX handed_over_at ON handed_over(at_ms);
        CREATE TABLE cursors (
            consumer TEXT PRIMARY KEY,         -- an events consumer (the HTTP event feed)
            seq      INTEGER NOT NULL          -- it has every event up to this seq
        );
        CREATE TABLE store_state (
            id       INTEGER PRIMARY KEY CHECK (id = 1),
            last_seq INTEGER NOT NULL,         -- highest seq ever given (events may be pruned)
            probe_ms INTEGER                   -- written by an empty commit (the writer's probe)
        );
        INSERT INTO store_state (id, last_seq) VALUES (1, 0);
        """,
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }
}

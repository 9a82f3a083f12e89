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
        // 2: the events journal in blocks: one row per run of consecutive events of one commit (at most
        // `SQLiteMessageStore.eventsPerBlock`, one time), instead of one row per event. Writing and pruning a
        // row per event cost about 11,000 instructions per message (two events each), a fifth of the commit.
        // Each event keeps its own seq: pruning still goes event by event (a block's acknowledged or expired
        // head is cut off), and `events` stays readable, as a view of the blocks' lines.
        """
        CREATE TABLE event_blocks (
            first_seq INTEGER PRIMARY KEY,     -- seq of the block's first event
            last_seq  INTEGER NOT NULL,        -- its events have every seq from first_seq to last_seq, in order
            time_ms   INTEGER NOT NULL,        -- wall clock of each of its events, ms since 1970
            lines     TEXT NOT NULL            -- the events' JSON objects (without seq and time), each but the
                                               -- last followed by a line feed (only the last may contain one)
        );
        INSERT INTO event_blocks (first_seq, last_seq, time_ms, lines) SELECT seq, seq, time_ms, line FROM events;
        DROP TABLE events;
        CREATE VIEW events (seq, time_ms, line) AS
        WITH RECURSIVE split (seq, last_seq, time_ms, line, rest) AS (
            SELECT first_seq, last_seq, time_ms,
                   CASE WHEN first_seq = last_seq THEN lines ELSE substr(lines, 1, instr(lines, char(10)) - 1) END,
                   CASE WHEN first_seq = last_seq THEN '' ELSE substr(lines, instr(lines, char(10)) + 1) END
            FROM event_blocks
            UNION ALL
            SELECT seq + 1, last_seq, time_ms,
                   CASE WHEN seq + 1 = last_seq THEN rest ELSE substr(rest, 1, instr(rest, char(10)) - 1) END,
                   CASE WHEN seq + 1 = last_seq THEN '' ELSE substr(rest, instr(rest, char(10)) + 1) END
            FROM split WHERE seq < last_seq
        )
        SELECT seq, time_ms, line FROM split;
        """,
        // 3: finals as narrow rows of their own. A final was an UPDATE of the wide `messages` row found by its
        // message_id text, moving it from the `messages_live` index to `messages_final`: about 16,000
        // instructions per message. Now it appends a row to `finals`, keyed by its message's accept_seq (which
        // the writer keeps for each live message, `SQLiteLiveMessages`). A message is live while it has no
        // finals row; opening the store reads the live ones from `store_state.live_floor` on (the lowest live
        // accept_seq, written with each commit) instead of through an index kept at every insert and final.
        // Pruning walks the finals in accept_seq order from `store_state.prune_floor` (`SQLiteFinalsPruning`),
        // so no index on their time is kept either (about 4,000 instructions per message and 4 WAL pages a
        // commit fewer).
        // A final message keeps its JSON until it is pruned (the update emptied it, but the room stayed free
        // inside its page): 20 % more file for the same retained messages in a model of a flood (33.3 MB
        // against 27.8 MB for 70,000). docs/performance.md, "Eleventh round".
        """
        CREATE TABLE messages_v3 (
            accept_seq     INTEGER PRIMARY KEY, -- seq of its `accepted` event: the accept order
            message_id     TEXT NOT NULL,
            json           TEXT NOT NULL,       -- the legacy XMPP JSON sent inside <gcm> (ccs-protocol.md §3)
            target         TEXT NOT NULL,
            rate_key       TEXT,                -- NULL: the same as target (as ccsd's intake always gives it)
            accepted_at_ms INTEGER NOT NULL,    -- wall clock at intake, ms since 1970: the time_to_live clock
            time_to_live   INTEGER NOT NULL,    -- seconds
            attempts       INTEGER NOT NULL DEFAULT 0,  -- as of its last progress while live
            sends          INTEGER NOT NULL DEFAULT 0,
            last_error     TEXT
        );
        CREATE TABLE finals (
            accept_seq  INTEGER PRIMARY KEY,    -- its message's (messages.accept_seq)
            final_event TEXT NOT NULL,          -- the final event's JSON object
            final_at_ms INTEGER NOT NULL,       -- wall clock when it became final, ms since 1970
            attempts    INTEGER,                -- the progress written with the final (NULL: the message
            sends       INTEGER,                -- row's attempts, sends and last_error hold)
            last_error  TEXT
        );
        INSERT INTO messages_v3 (accept_seq, message_id, json, target, rate_key, accepted_at_ms, time_to_live,
                                 attempts, sends, last_error)
            SELECT accept_seq, message_id, json, target, nullif(rate_key, target), accepted_at_ms, time_to_live,
                   attempts, sends, last_error FROM messages ORDER BY accept_seq;
        INSERT INTO finals (accept_seq, final_event, final_at_ms)
            SELECT accept_seq, final_event, coalesce(final_at_ms, 0) FROM messages WHERE final_event IS NOT NULL;
        DROP TABLE messages;
        ALTER TABLE messages_v3 RENAME TO messages;
        CREATE UNIQUE INDEX messages_id ON messages(message_id);
        ALTER TABLE store_state ADD COLUMN live_floor INTEGER NOT NULL DEFAULT 0;   -- no live accept_seq is lower
        ALTER TABLE store_state ADD COLUMN prune_floor INTEGER NOT NULL DEFAULT 0;  -- no final below it is left to
                                                                                  -- prune but those the walk keeps
        CREATE VIEW live_messages AS
            SELECT * FROM messages m WHERE NOT EXISTS (SELECT 1 FROM finals f WHERE f.accept_seq = m.accept_seq);
        """,
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }
}

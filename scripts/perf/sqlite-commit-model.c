// A model of one flood commit of ccsd's SQLite store, to measure schema variants with callgrind
// (`scripts/perf/sqlite-commit-model` builds and runs it): per commit, 140 inserts (multi-row INSERT OR
// IGNORE, 64 rows a statement, each in a savepoint), 140 finals of the previous commit's messages, the
// commit's accepted and final events as blocks of up to 256 lines, last_seq, the per-commit pruning
// queries (nothing qualifies in a flood), COMMIT. Texts shaped like ccsd-bench's messages.
//
// usage: sqlite-commit-model VARIANT COMMITS DBPATH     (PAGE_SIZE=n sets page_size; FRAMES=1 turns
//        automatic checkpoints off and prints the WAL frames written per commit)
// VARIANT:
//   A  schema 2 as shipped: messages(message_id TEXT PRIMARY KEY, ..., final_event, final_at_ms), partial
//      indexes messages_live (accept_seq, live) and messages_final (final_at_ms, final); a final is an
//      UPDATE by message_id that sets the final and empties json, target and rate_key.
//   B  no final columns or partial indexes; finals(seq INTEGER PRIMARY KEY (the final event's seq),
//      message_id TEXT UNIQUE, final_event, final_at_ms, ...); a final is an INSERT OR IGNORE ... WHERE
//      EXISTS (the message by message_id).
//   C  finals(accept_seq INTEGER PRIMARY KEY, ...) inserted by an accept_seq the writer knows: no text key
//      at the final, no index on final_at_ms (a lower bound, not a design: pruning would scan).
//   D  messages(accept_seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, ...) and finals keyed by
//      accept_seq (known to the writer) with an index on final_at_ms; a live floor (the lowest live
//      accept_seq, for startup) advanced by one query per commit.
//   E  C with the index on final_at_ms (messages keep their own rowid).
//   F  messages(accept_seq INTEGER PRIMARY KEY, message_id UNIQUE, ... final columns), messages_final only;
//      a final is an UPDATE by accept_seq.
//   G  F with messages_live too.
//   H  D, but a final finds its accept_seq by message_id: INSERT OR IGNORE INTO finals SELECT ... FROM
//      messages WHERE message_id = ?.
//   K  D with the live floor kept by the writer (written with last_seq, no query) and the final's progress in
//      its finals row (attempts, sends, last_error).
//   P  K without the index on final_at_ms: pruning walks the finals in accept_seq order from a cursor (one
//      query per commit, joined with the message's accepted_at_ms to stop at the first one accepted within
//      the retention), deleting the due ones by accept_seq.
//   U  A, but a commit's finals go in by multi-row UPDATEs (UPDATE ... FROM (VALUES (message_id, event), ...)),
//      64, 64, 8 and 4 rows, each in a savepoint, as the inserts do.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define PER 140
static sqlite3 *db;
static void ex(const char *sql) { char *e = 0; if (sqlite3_exec(db, sql, 0, 0, &e) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, e); exit(1); } }
static sqlite3_stmt *prep(const char *sql) { sqlite3_stmt *s; if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, 0) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db)); exit(1); } return s; }
static void run(sqlite3_stmt *s) { int rc; while ((rc = sqlite3_step(s)) == SQLITE_ROW) {} if (rc != SQLITE_DONE) { fprintf(stderr, "step: %s\n", sqlite3_errmsg(db)); exit(1); } sqlite3_reset(s); sqlite3_clear_bindings(s); }
int main(int argc, char **argv) {
    char v = argv[1][0]; int commits = atoi(argv[2]);
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    unlink(argv[3]);
    char p[512]; snprintf(p, sizeof p, "%s-wal", argv[3]); unlink(p);
    if (sqlite3_open_v2(argv[3], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 0)) return 1;
    if (getenv("FRAMES")) sqlite3_exec(db, "PRAGMA wal_autocheckpoint=0", 0, 0, 0);
    if (getenv("PAGE_SIZE")) { char ps[64]; snprintf(ps, sizeof ps, "PRAGMA page_size=%s", getenv("PAGE_SIZE")); ex(ps); }
    ex("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA secure_delete=OFF; PRAGMA journal_size_limit=67108864");
    const char *msgcols = "message_id TEXT PRIMARY KEY, accept_seq INTEGER NOT NULL, json TEXT NOT NULL, target TEXT NOT NULL, rate_key TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, time_to_live INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sends INTEGER NOT NULL DEFAULT 0, last_error TEXT";
    char sql[4096];
    if (v == 'A' || v == 'U') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (%s, final_event TEXT, final_at_ms INTEGER);"
            "CREATE INDEX messages_live ON messages(accept_seq) WHERE final_event IS NULL;"
            "CREATE INDEX messages_final ON messages(final_at_ms) WHERE final_event IS NOT NULL;", msgcols);
    } else if (v == 'B') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (%s);"
            "CREATE TABLE finals (seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, final_event TEXT NOT NULL, final_at_ms INTEGER NOT NULL, attempts INTEGER, sends INTEGER, last_error TEXT);", msgcols);
    } else if (v == 'H' || v == 'K' || v == 'P') {
        // H and K index the finals' time; P walks them in accept order instead.
        snprintf(sql, sizeof sql, "CREATE TABLE messages (accept_seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, target TEXT NOT NULL, rate_key TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, time_to_live INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sends INTEGER NOT NULL DEFAULT 0, last_error TEXT);"
            "CREATE TABLE finals (accept_seq INTEGER PRIMARY KEY, final_event TEXT NOT NULL, final_at_ms INTEGER NOT NULL, attempts INTEGER, sends INTEGER, last_error TEXT);%s",
            v == 'P' ? "" : "CREATE INDEX finals_at ON finals(final_at_ms);");
    } else if (v == 'F') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (accept_seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, target TEXT NOT NULL, rate_key TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, time_to_live INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sends INTEGER NOT NULL DEFAULT 0, last_error TEXT, final_event TEXT, final_at_ms INTEGER);"
            "CREATE INDEX messages_final ON messages(final_at_ms) WHERE final_event IS NOT NULL;");
    } else if (v == 'G') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (accept_seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, target TEXT NOT NULL, rate_key TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, time_to_live INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sends INTEGER NOT NULL DEFAULT 0, last_error TEXT, final_event TEXT, final_at_ms INTEGER);"
            "CREATE INDEX messages_live ON messages(accept_seq) WHERE final_event IS NULL;"
            "CREATE INDEX messages_final ON messages(final_at_ms) WHERE final_event IS NOT NULL;");
    } else if (v == 'C') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (%s);"
            "CREATE TABLE finals (accept_seq INTEGER PRIMARY KEY, final_event TEXT NOT NULL, final_at_ms INTEGER NOT NULL, attempts INTEGER, sends INTEGER, last_error TEXT);", msgcols);
    } else if (v == 'E') {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (%s);"
            "CREATE TABLE finals (accept_seq INTEGER PRIMARY KEY, final_event TEXT NOT NULL, final_at_ms INTEGER NOT NULL, attempts INTEGER, sends INTEGER, last_error TEXT);"
            "CREATE INDEX finals_at ON finals(final_at_ms);", msgcols);
    } else {
        snprintf(sql, sizeof sql, "CREATE TABLE messages (accept_seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, target TEXT NOT NULL, rate_key TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, time_to_live INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sends INTEGER NOT NULL DEFAULT 0, last_error TEXT);"
            "CREATE TABLE finals (accept_seq INTEGER PRIMARY KEY, final_event TEXT NOT NULL, final_at_ms INTEGER NOT NULL, attempts INTEGER, sends INTEGER, last_error TEXT);"
            "CREATE INDEX finals_at ON finals(final_at_ms);");
    }
    ex(sql);
    ex("CREATE TABLE event_blocks (first_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, time_ms INTEGER NOT NULL, lines TEXT NOT NULL);"
       "CREATE TABLE handed_over (message_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL); CREATE INDEX handed_over_at ON handed_over(at_ms);"
       "CREATE TABLE cursors (consumer TEXT PRIMARY KEY, seq INTEGER NOT NULL);"
       "CREATE TABLE store_state (id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER NOT NULL, probe_ms INTEGER); INSERT INTO store_state VALUES (1, 0, NULL);");
    sqlite3_stmt *begin = prep("BEGIN IMMEDIATE"), *commit = prep("COMMIT"), *sp = prep("SAVEPOINT inserts"), *rel = prep("RELEASE inserts");
    char ins[8192]; int n = 0;
    n += snprintf(ins + n, sizeof ins - n, "INSERT OR IGNORE INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms, time_to_live, attempts, sends, last_error) VALUES ");
    for (int r = 0; r < 64; r++) { n += snprintf(ins + n, sizeof ins - n, "%s(", r ? ", " : ""); for (int c = 1; c <= 10; c++) n += snprintf(ins + n, sizeof ins - n, "%s?%d", c > 1 ? ", " : "", r * 10 + c); n += snprintf(ins + n, sizeof ins - n, ")"); }
    sqlite3_stmt *insert64 = prep(ins);
    char ins12[4096]; n = 0;
    n += snprintf(ins12 + n, sizeof ins12 - n, "INSERT OR IGNORE INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms, time_to_live, attempts, sends, last_error) VALUES ");
    for (int r = 0; r < 12; r++) { n += snprintf(ins12 + n, sizeof ins12 - n, "%s(", r ? ", " : ""); for (int c = 1; c <= 10; c++) n += snprintf(ins12 + n, sizeof ins12 - n, "%s?%d", c > 1 ? ", " : "", r * 10 + c); n += snprintf(ins12 + n, sizeof ins12 - n, ")"); }
    sqlite3_stmt *insert12 = prep(ins12);
    sqlite3_stmt *final;
    if (v == 'H') final = prep("INSERT OR IGNORE INTO finals (accept_seq, final_event, final_at_ms) SELECT accept_seq, ?1, ?2 FROM messages WHERE message_id = ?3 AND ?4 IS NOT NULL");
    else if (v == 'F' || v == 'G') final = prep("UPDATE messages SET final_event = ?1, final_at_ms = ?2, json = '', target = '', rate_key = '' WHERE accept_seq = ?4 AND final_event IS NULL AND ?3 IS NOT NULL");
    else if (v == 'A' || v == 'U') final = prep("UPDATE messages SET final_event = ?1, final_at_ms = ?2, json = '', target = '', rate_key = '' WHERE message_id = ?3 AND final_event IS NULL");
    else if (v == 'B') final = prep("INSERT OR IGNORE INTO finals (seq, message_id, final_event, final_at_ms) SELECT ?4, ?3, ?1, ?2 WHERE EXISTS (SELECT 1 FROM messages WHERE message_id = ?3)");
    else if (v == 'K' || v == 'P') final = prep("INSERT INTO finals (accept_seq, final_event, final_at_ms, attempts, sends, last_error) VALUES (?4, ?1, ?2, 1, 1, NULL)");
    else final = prep("INSERT OR IGNORE INTO finals (accept_seq, final_event, final_at_ms) VALUES (?4, ?1, ?2)");
    sqlite3_stmt *updates[65] = {0};
    if (v == 'U') for (int rows = 4; rows <= 64; rows *= 2) {
        char up[8192]; int m = snprintf(up, sizeof up, "UPDATE messages SET final_event = v.column2, final_at_ms = ?1, json = '', target = '', rate_key = '' FROM (VALUES ");
        for (int r = 0; r < rows; r++) m += snprintf(up + m, sizeof up - m, "%s(?%d, ?%d)", r ? ", " : "", 2 + 2 * r, 3 + 2 * r);
        snprintf(up + m, sizeof up - m, ") AS v WHERE messages.message_id = v.column1 AND messages.final_event IS NULL");
        updates[rows] = prep(up);
        if (rows == 64 && getenv("PLAN")) { char q[8300]; snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", up); sqlite3_stmt *e = prep(q); while (sqlite3_step(e) == SQLITE_ROW) printf("plan: %s\n", sqlite3_column_text(e, 3)); sqlite3_finalize(e); }
    }
    sqlite3_stmt *block = prep("INSERT INTO event_blocks (first_seq, last_seq, time_ms, lines) VALUES (?1, ?2, ?3, ?4)");
    sqlite3_stmt *lastseq = prep(v == 'K' || v == 'P' ? "UPDATE store_state SET last_seq = ?1, probe_ms = ?1 WHERE id = 1" : "UPDATE store_state SET last_seq = ?1 WHERE id = 1");
    // PRUNE=1: the finals of every earlier commit qualify (steady state past the retention: each commit prunes one).
    int pruning = getenv("PRUNE") != 0;
    sqlite3_stmt *pruneMessages = v == 'K' || v == 'D' || v == 'H' ? prep("DELETE FROM messages WHERE accept_seq IN (SELECT accept_seq FROM finals WHERE final_at_ms < ?1 ORDER BY final_at_ms LIMIT ?2)") : 0;
    sqlite3_stmt *pruneFinal = 0, *walk = 0, *delFinal = 0, *delMessage = 0; long long cursor = 0;
    if (v == 'P') {
        walk = prep("SELECT f.accept_seq, f.final_at_ms, m.accepted_at_ms FROM finals f JOIN messages m ON m.accept_seq = f.accept_seq WHERE f.accept_seq >= ?1 ORDER BY f.accept_seq LIMIT ?2");
        delFinal = prep("DELETE FROM finals WHERE accept_seq = ?1");
        delMessage = prep("DELETE FROM messages WHERE accept_seq = ?1");
    } else
    if (v == 'A' || v == 'U' || v == 'F' || v == 'G') pruneFinal = prep("DELETE FROM messages WHERE message_id IN (SELECT message_id FROM messages WHERE final_event IS NOT NULL AND final_at_ms < ?1 ORDER BY final_at_ms LIMIT ?2)");
    else if (v == 'D' || v == 'E' || v == 'H' || v == 'K') pruneFinal = prep(pruning ? "DELETE FROM finals WHERE accept_seq IN (SELECT accept_seq FROM finals WHERE final_at_ms < ?1 ORDER BY final_at_ms LIMIT ?2)" : "SELECT accept_seq FROM finals WHERE final_at_ms < ?1 ORDER BY final_at_ms LIMIT ?2");
    else pruneFinal = prep("SELECT final_at_ms FROM finals WHERE ?1 IS NOT NULL AND ?2 IS NOT NULL ORDER BY rowid LIMIT 1");
    sqlite3_stmt *pruneHO = prep("DELETE FROM handed_over WHERE message_id IN (SELECT message_id FROM handed_over WHERE at_ms < ?1 ORDER BY at_ms LIMIT ?2)");
    sqlite3_stmt *oldest = prep("SELECT first_seq, time_ms FROM event_blocks ORDER BY first_seq LIMIT 1");
    sqlite3_stmt *mincur = prep("SELECT min(seq) FROM cursors");
    long long seq = 0, id = 0; static char json[PER][200], mid[PER][32], target[PER][64], line[300], lines[PER * 2 * 120];
    long long prevAccept[PER]; char prevID[PER][32]; int havePrev = 0;
    for (int k = 0; k < commits; k++) {
        long long now = 1700000000000LL + k;
        run(begin);
        long long firstSeq = seq + 1; int nlines = 0; lines[0] = 0; size_t lo = 0;
        long long acc[PER];
        for (int start = 0; start < PER; start += 64) {
            int rows = PER - start < 64 ? PER - start : 64;
            sqlite3_stmt *s = rows == 64 ? insert64 : insert12;
            for (int r = 0; r < rows; r++) {
                int i = start + r; long long m = id + i;
                snprintf(mid[i], 32, "b-%lld", m);
                snprintf(target[i], 64, "bench-token-%lld-APA91bHPRgkFLJu4x", m % 1000);
                snprintf(json[i], 200, "{\"to\":\"%s\",\"message_id\":\"%s\",\"data\":{\"score\":\"%lld\",\"text\":\"benchmark payload <&>\"},\"time_to_live\":600}", target[i], mid[i], m);
                acc[i] = ++seq;
                sqlite3_bind_text(s, r * 10 + 1, mid[i], -1, SQLITE_STATIC);
                sqlite3_bind_int64(s, r * 10 + 2, acc[i]);
                sqlite3_bind_text(s, r * 10 + 3, json[i], -1, SQLITE_STATIC);
                sqlite3_bind_text(s, r * 10 + 4, target[i], -1, SQLITE_STATIC);
                sqlite3_bind_text(s, r * 10 + 5, "default", -1, SQLITE_STATIC);
                sqlite3_bind_int64(s, r * 10 + 6, now);
                sqlite3_bind_int64(s, r * 10 + 7, 600);
                sqlite3_bind_int64(s, r * 10 + 8, 0);
                sqlite3_bind_int64(s, r * 10 + 9, 0);
                sqlite3_bind_null(s, r * 10 + 10);
                lo += snprintf(lines + lo, sizeof lines - lo, "%s{\"event\":\"accepted\",\"message_id\":\"%s\",\"queue\":\"default\"}", nlines++ ? "\n" : "", mid[i]);
            }
            run(sp); run(s); run(rel);
        }
        if (havePrev && v == 'U') {
            static char fl[PER][300];
            for (int start = 0; start < PER;) {
                int left = PER - start, rows = left >= 64 ? 64 : left >= 8 ? 8 : 4;
                sqlite3_stmt *s = updates[rows];
                sqlite3_bind_int64(s, 1, now);
                for (int r = 0; r < rows; r++) {
                    int i = start + r;
                    snprintf(fl[i], 300, "{\"event\":\"acked\",\"message_id\":\"%s\",\"attempts\":1,\"latency_ms\":3}", prevID[i]);
                    sqlite3_bind_text(s, 2 + 2 * r, prevID[i], -1, SQLITE_STATIC);
                    sqlite3_bind_text(s, 3 + 2 * r, fl[i], -1, SQLITE_STATIC);
                }
                run(sp); run(s);
                if (sqlite3_changes(db) != rows) { fprintf(stderr, "multi-row final changed %d of %d\n", sqlite3_changes(db), rows); return 1; }
                run(rel);
                for (int r = 0; r < rows; r++) { ++seq; lo += snprintf(lines + lo, sizeof lines - lo, "\n%s", fl[start + r]); nlines++; }
                start += rows;
            }
        } else if (havePrev) for (int i = 0; i < PER; i++) {
            ++seq;
            snprintf(line, sizeof line, "{\"event\":\"acked\",\"message_id\":\"%s\",\"attempts\":1,\"latency_ms\":3}", prevID[i]);
            sqlite3_bind_text(final, 1, line, -1, SQLITE_STATIC);
            sqlite3_bind_int64(final, 2, now);
            sqlite3_bind_text(final, 3, prevID[i], -1, SQLITE_STATIC);
            sqlite3_bind_int64(final, 4, (v >= 'C' && v != 'B') ? prevAccept[i] : seq);
            run(final);
            if (sqlite3_changes(db) != 1) { fprintf(stderr, "final changed nothing\n"); return 1; }
            lo += snprintf(lines + lo, sizeof lines - lo, "\n%s", line); nlines++;
        }
        // two blocks, as writeJournal does for up to 256 events each
        size_t half = 0; int cnt = 0; for (size_t c = 0; c < lo; c++) if (lines[c] == '\n' && ++cnt == 256) { half = c; break; }
        long long lastSeq = seq;
        if (half) {
            sqlite3_bind_int64(block, 1, firstSeq); sqlite3_bind_int64(block, 2, firstSeq + 255); sqlite3_bind_int64(block, 3, now);
            sqlite3_bind_text(block, 4, lines, (int)half, SQLITE_STATIC); run(block);
            sqlite3_bind_int64(block, 1, firstSeq + 256); sqlite3_bind_int64(block, 2, lastSeq); sqlite3_bind_int64(block, 3, now);
            sqlite3_bind_text(block, 4, lines + half + 1, (int)(lo - half - 1), SQLITE_STATIC); run(block);
        } else {
            sqlite3_bind_int64(block, 1, firstSeq); sqlite3_bind_int64(block, 2, lastSeq); sqlite3_bind_int64(block, 3, now);
            sqlite3_bind_text(block, 4, lines, (int)lo, SQLITE_STATIC); run(block);
        }
        sqlite3_bind_int64(lastseq, 1, seq); run(lastseq);
        long long cutoff = pruning ? now : now - 86400000;
        if (pruneMessages && pruning) { sqlite3_bind_int64(pruneMessages, 1, cutoff); sqlite3_bind_int64(pruneMessages, 2, 1000); run(pruneMessages); }
        if (v == 'P') {
            long long due[1000]; int ndue = 0;
            sqlite3_bind_int64(walk, 1, cursor); sqlite3_bind_int64(walk, 2, 1000);
            while (sqlite3_step(walk) == SQLITE_ROW) {
                if (sqlite3_column_int64(walk, 2) >= cutoff) break;
                long long a = sqlite3_column_int64(walk, 0);
                if (sqlite3_column_int64(walk, 1) < cutoff) due[ndue++] = a;
                cursor = a + 1;
            }
            sqlite3_reset(walk);
            for (int d = 0; d < ndue; d++) {
                sqlite3_bind_int64(delFinal, 1, due[d]); run(delFinal);
                sqlite3_bind_int64(delMessage, 1, due[d]); run(delMessage);
            }
        } else { sqlite3_bind_int64(pruneFinal, 1, cutoff); sqlite3_bind_int64(pruneFinal, 2, 1000); run(pruneFinal); }
        sqlite3_bind_int64(pruneHO, 1, now - 600000); sqlite3_bind_int64(pruneHO, 2, 1000); run(pruneHO);
        run(oldest); run(mincur);
        if (v == 'H' || v == 'D') {
            static sqlite3_stmt *floorq; static long long fl = 0;
            if (!floorq) floorq = prep("SELECT accept_seq FROM messages m WHERE accept_seq >= ?1 AND NOT EXISTS (SELECT 1 FROM finals f WHERE f.accept_seq = m.accept_seq) ORDER BY accept_seq LIMIT 1");
            sqlite3_bind_int64(floorq, 1, fl);
            if (sqlite3_step(floorq) == SQLITE_ROW) fl = sqlite3_column_int64(floorq, 0);
            sqlite3_reset(floorq);
        }
        run(commit);
        for (int i = 0; i < PER; i++) { memcpy(prevID[i], mid[i], 32); prevAccept[i] = acc[i]; }
        havePrev = 1; id += PER;
    }
    if (getenv("FRAMES")) { sqlite3_int64 w = 0; FILE *f = fopen(p, "rb"); if (f) { fseek(f, 0, SEEK_END); w = ftell(f); fclose(f); } printf("%c frames per commit %.1f\n", v, (double)(w - 32) / (4096 + 24) / commits); }
    sqlite3_close(db);
    return 0;
}

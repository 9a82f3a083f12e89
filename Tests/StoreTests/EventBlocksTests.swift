import CCS
import Foundation
import Testing
@testable import Store

/// The SQLite store keeps its journal in blocks of consecutive events (schema version 2), but every rule is
/// still per event: what `events(after:limit:)` answers, the seqs, the `events` view, and pruning (the events
/// of the `pruneLimitPerCommit` seqs from the oldest on that every consumer acknowledged or that are past the
/// retention, once the oldest one is). A model of that rule with one entry per event (the rule of the
/// one-row-per-event journal, `DELETE FROM events WHERE seq < oldest + limit AND (seq <= acknowledged OR
/// time_ms < cutoff)`) must agree with the store over random commits: blocks of every size around
/// `eventsPerBlock`, lines with line feeds (which end a block), the clock going back, consumers acknowledging
/// inside blocks, prune limits that cut blocks.
@Suite struct EventBlocksTests {
    struct Model {
        var events: [JournaledEvent] = []
        var cursors: [String: Int64] = [:]
        var lastSeq: Int64 = 0

        mutating func prune(now: Int64, configuration: StoreConfiguration) {
            guard let oldest = events.first else { return }
            let acknowledged = cursors.values.min() ?? 0
            let cutoff = now - configuration.eventsRetentionMillis
            guard oldest.seq <= acknowledged || oldest.timeUnixMillis < cutoff else { return }
            let windowEnd = oldest.seq + Int64(configuration.pruneLimitPerCommit)
            events.removeAll { $0.seq < windowEnd && ($0.seq <= acknowledged || $0.timeUnixMillis < cutoff) }
        }
    }

    static func line(_ n: Int, using random: inout SplitMix64) -> String {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: "{\"event\":\"upstream\",\"text\":\"two\nlines\",\"n\":\(n)}"   // a line feed ends its block
        case 1: "\n"
        case 2: ""
        case 3: "{\"event\":\"acked\",\"message_id\":\"é-\(n)-😀\"}\n"
        default: "{\"event\":\"acked\",\"message_id\":\"m-\(n)\"}"
        }
    }

    @Test(arguments: [(1 as UInt64, 1_000), (2, 7), (3, 300), (4, 1)])
    func blocksAnswerAndPruneAsOneRowPerEvent(seed: UInt64, pruneLimit: Int) throws {
        let directory = TemporaryDirectory()
        let configuration = StoreConfiguration(synchronous: .normal, eventsRetentionMillis: 50,
                                               pruneLimitPerCommit: pruneLimit)
        let store = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        defer { store.close() }
        var random = SplitMix64(seed: seed)
        var model = Model()
        var now: Int64 = 10_000
        var n = 0
        for round in 0..<120 {
            now += Int64.random(in: -30...40, using: &random)  // the wall clock may go back
            let count = [0, 1, 2, 255, 256, 257, 513, Int.random(in: 0...40, using: &random)]
                .randomElement(using: &random)!
            var batch = StoreBatch()
            for _ in 0..<count {
                n += 1
                batch.record(StoreBatch.Record(id: UInt64(n), line: Self.line(n, using: &random)))
            }
            for consumer in ["file", "http"] where Int.random(in: 0..<3, using: &random) == 0 {
                // Anywhere up to what the journal has: often inside a block.
                let through = Int64.random(in: 0...max(model.lastSeq + Int64(count), 0), using: &random)
                batch.acknowledgeEvents(consumer: consumer, through: through)
                model.cursors[consumer] = max(model.cursors[consumer] ?? through, through)
            }
            let result = try store.commit(batch, nowUnixMillis: now)
            var expectedJournaled: [JournaledEvent] = []
            for operation in batch.operations {
                guard case .record(let record) = operation else { continue }
                model.lastSeq += 1
                expectedJournaled.append(JournaledEvent(seq: model.lastSeq, timeUnixMillis: now, line: record.line))
            }
            #expect(result.journaled == expectedJournaled, "round \(round)")
            model.events += expectedJournaled
            model.prune(now: now, configuration: configuration)

            #expect(try store.events(after: 0, limit: 1_000_000) == model.events, "round \(round)")
            let after = Int64.random(in: 0...(model.lastSeq + 1), using: &random)
            let limit = Int.random(in: 1...300, using: &random)
            #expect(try store.events(after: after, limit: limit)
                    == Array(model.events.filter { $0.seq > after }.prefix(limit)), "round \(round)")
            #expect(try store.events(after: after, limit: 0).isEmpty)
            // The view gives the same rows.
            #expect(try store.count("events") == Int64(model.events.count), "round \(round)")
        }
        let viewed = try store.text("""
            SELECT group_concat(seq || ':' || time_ms || ':' || line, '|') FROM (SELECT * FROM events ORDER BY seq)
            """)
        #expect(viewed ?? "" == model.events.map { "\($0.seq):\($0.timeUnixMillis):\($0.line)" }.joined(separator: "|"))
        store.close()
        let reopened = try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        defer { reopened.close() }
        #expect(try reopened.load(nowUnixMillis: now).lastSeq == model.lastSeq)
        #expect(try reopened.events(after: 0, limit: 1_000_000) == model.events)
    }

    /// A version 1 database (one row per event, messages live and final, cursors, handed-over ids) migrates to
    /// the current version keeping everything: the live messages in accept order with their counters, the
    /// final ones with their outcome, every event with its seq, time and line (a line feed in one too), the
    /// cursors, the handed-over ids and the last seq.
    @Test func aVersionOneDatabaseMigratesKeepingEverything() throws {
        let directory = TemporaryDirectory()
        let state = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let lines = [#"{"event":"accepted","message_id":"live-1"}"#, #"{"event":"accepted","message_id":"final-1"}"#,
                     #"{"event":"accepted","message_id":"live-2"}"#, "{\"event\":\"upstream\",\"text\":\"a\nb\"}",
                     #"{"event":"acked","message_id":"final-1"}"#]
        do {
            let database = try SQLiteDatabase(path: state + "/ccsd.sqlite3")
            defer { database.close() }
            try database.execute("PRAGMA journal_mode = WAL", operation: "test")
            try database.execute(SQLiteSchema.migrations[0], operation: "test")
            try database.execute("PRAGMA user_version = 1", operation: "test")
            try database.execute("""
                INSERT INTO messages (message_id, accept_seq, json, target, rate_key, accepted_at_ms, time_to_live,
                                      attempts, sends, last_error, final_event, final_at_ms) VALUES
                    ('live-1', 1, '{"to":"t1"}', 't1', 'k1', 1000, 600, 2, 3, 'SERVICE_UNAVAILABLE', NULL, NULL),
                    ('final-1', 2, '{"to":"t2"}', 't2', 'k2', 1001, 60, 1, 1, NULL, '\(lines[4])', 5000),
                    ('live-2', 3, '{"to":"t3"}', 't3', 'k3', 1002, 0, 0, 0, NULL, NULL, NULL);
                INSERT INTO events (seq, time_ms, line) VALUES
                    (3, 1000, '\(lines[0])'), (4, 1001, '\(lines[1])'), (5, 1002, '\(lines[2])'),
                    (6, 4000, '\(lines[3])'), (7, 5000, '\(lines[4])');
                INSERT INTO handed_over (message_id, at_ms) VALUES ('up-1', 4000);
                INSERT INTO cursors (consumer, seq) VALUES ('events-file', 4), ('http', 2);
                UPDATE store_state SET last_seq = 7;
                """, operation: "test")
        }
        let store = try SQLiteMessageStore(directory: state)
        defer { store.close() }
        #expect(try store.pragma("user_version") == SQLiteSchema.currentVersion)
        let snapshot = try store.load(nowUnixMillis: 6_000)
        var live1 = MessageRecord(messageID: "live-1", json: #"{"to":"t1"}"#, to: "t1", rateKey: "k1", acceptedAt: 1.0,
                                  acceptedAtUnixMillis: 1000, timeToLive: 600)
        live1.attempts = 2
        live1.sends = 3
        live1.lastError = "SERVICE_UNAVAILABLE"
        let live2 = MessageRecord(messageID: "live-2", json: #"{"to":"t3"}"#, to: "t3", rateKey: "k3", acceptedAt: 1.002,
                                  acceptedAtUnixMillis: 1002, timeToLive: 0)
        #expect(snapshot.live == [live1, live2])
        #expect(snapshot.handedOver == [HandedOverMessage(messageID: "up-1", atUnixMillis: 4000)])
        #expect(snapshot.lastSeq == 7)
        #expect(try store.storedMessage("final-1") == StoredMessage(
            messageID: "final-1", acceptedAtUnixMillis: 1001, attempts: 1, sends: 1, lastError: nil,
            finalEvent: lines[4], finalAtUnixMillis: 5000))
        #expect(try store.events(after: 0, limit: 100) == zip(3..., zip([1000, 1001, 1002, 4000, 5000], lines)).map {
            JournaledEvent(seq: Int64($0.0), timeUnixMillis: Int64($0.1.0), line: $0.1.1)
        })
        #expect(try store.events(after: 5, limit: 1).map(\.seq) == [6])
        #expect(try store.cursor(of: "events-file") == 4)
        #expect(try store.cursor(of: "http") == 2)
        #expect(try store.count("events") == 5)
        // And it goes on from there: the next event gets seq 8, a stored final message answers its outcome.
        let next = try store.commit(batch { b in
            b.insert(insert("final-1"))
            b.record(final(1, "live-1"))
        }, nowUnixMillis: 6_000)
        #expect(next.persisted.map(\.outcome) == [.duplicateFinal(outcome: lines[4])])
        #expect(next.journaled.map(\.seq) == [8])
        #expect(try store.load(nowUnixMillis: 6_000).live == [live2])
    }
}

import CCS
import Testing
@testable import Store

/// The rules every store keeps (issue 8 deliverable 3), run against the SQLite and the in-memory store.
@Suite struct MessageStoreBehaviourTests {
    @Test(arguments: StoreKind.allCases)
    func roundTripLoadsOnlyLiveMessagesInAcceptOrderWithCounters(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory)
        defer { store.close() }

        let first = try store.commit(batch { b in
            b.insert(insert("c", at: 1_000, line: 7))
            b.insert(insert("a", at: 1_001, line: 8))
            b.insert(insert("b", at: 1_002, line: 9))
        }, nowUnixMillis: 2_000)
        #expect(first.persisted == [
            PersistResult(messageID: "c", line: 7, outcome: .stored),
            PersistResult(messageID: "a", line: 8, outcome: .stored),
            PersistResult(messageID: "b", line: 9, outcome: .stored),
        ])
        #expect(first.journaled == [
            JournaledEvent(seq: 1, timeUnixMillis: 2_000, line: acceptedLine("c")),
            JournaledEvent(seq: 2, timeUnixMillis: 2_000, line: acceptedLine("a")),
            JournaledEvent(seq: 3, timeUnixMillis: 2_000, line: acceptedLine("b")),
        ])
        #expect(first.recordedThrough == nil)

        var progressed = message("a")
        progressed.attempts = 2
        progressed.sends = 3
        progressed.lastError = "SERVICE_UNAVAILABLE"
        let second = try store.commit(batch { b in
            b.progress(progressed)
            b.record(final(1, "c"))
        }, nowUnixMillis: 3_000)
        #expect(second.persisted.isEmpty)
        #expect(second.journaled == [JournaledEvent(seq: 4, timeUnixMillis: 3_000, line: finalLine("c"))])
        #expect(second.recordedThrough == 1)

        let snapshot = try store.load(nowUnixMillis: 4_000)
        #expect(snapshot.live.map(\.messageID) == ["a", "b"])
        #expect(snapshot.live.map(\.acceptedAtUnixMillis) == [1_001, 1_002])
        let a = try #require(snapshot.live.first)
        #expect(a.attempts == 2 && a.sends == 3 && a.lastError == "SERVICE_UNAVAILABLE")
        #expect(a.json == message("a").json && a.to == "tok-a" && a.rateKey == "tok-a" && a.timeToLive == 600)
        #expect(a.acceptedAt == 1.001)
        #expect(snapshot.lastSeq == 4)
        #expect(try store.events(after: 0, limit: 10).map(\.seq) == [1, 2, 3, 4])
        #expect(try store.events(after: 2, limit: 1).map(\.line) == [acceptedLine("b")])
    }

    /// Event texts kept as pieces (`EventText.accepted`, `EventText.acked`) are journaled as pieces, stored as a
    /// final outcome and read back as the same text as their strings, on both stores.
    @Test(arguments: StoreKind.allCases)
    func eventTextsKeptAsPiecesReadBackAsTheirText(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory, configuration: StoreConfiguration(finalRetentionMillis: 10_000))
        defer { store.close() }
        let accepted = try #require(EventText.accepted(messageID: "p"))
        let acked = try #require(EventText.acked(messageID: "p", to: "tok-p"))
        let ackedLine = #"{"event":"acked","message_id":"p","to":"tok-p"}"#
        let first = try store.commit(batch { b in
            b.insert(StoreBatch.Insert(record: message("p"), line: 1, acceptedText: accepted))
            b.record(StoreBatch.Record(id: 1, text: acked, finalMessageID: "p"))
        }, nowUnixMillis: 2_000)
        #expect(first.journaled.map(\.line) == [acceptedLine("p"), ackedLine])
        #expect(first.journaled.map(\.text) == [EventText(acceptedLine("p")), EventText(ackedLine)])
        // Journaled as they came: no `String` made for them on the way (the events file writes them from their pieces).
        #expect(first.journaled.map(\.text.isPlainEvent) == [true, true])
        #expect(try store.events(after: 0, limit: 10).map(\.line) == [acceptedLine("p"), ackedLine])
        #expect(try store.storedMessage("p")?.finalEvent == ackedLine)
        let again = try store.commit(batch { b in b.insert(StoreBatch.Insert(record: message("p"), line: 2, acceptedText: accepted)) },
                                     nowUnixMillis: 3_000)
        #expect(again.persisted == [PersistResult(messageID: "p", line: 2, outcome: .duplicateFinal(outcome: ackedLine))])
    }

    @Test(arguments: StoreKind.allCases)
    func aStoredMessageIDIsRefusedAndAFinalOneAnswersItsStoredOutcome(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let retention = StoreConfiguration(finalRetentionMillis: 10_000)
        let store = try kind.make(in: directory, configuration: retention)
        defer { store.close() }

        // In one batch and across batches.
        let first = try store.commit(batch(inserting: ["m", "m"]), nowUnixMillis: 1_000)
        #expect(first.persisted.map(\.outcome) == [.stored, .duplicateLive])
        #expect(first.journaled.count == 1)
        #expect(try store.commit(batch(inserting: ["m"]), nowUnixMillis: 1_100).persisted.map(\.outcome)
                == [.duplicateLive])

        _ = try store.commit(batch { $0.record(final(1, "m", "nacked")) }, nowUnixMillis: 2_000)
        let answered = try store.commit(batch(inserting: ["m"]), nowUnixMillis: 2_000 + 10_000)
        #expect(answered.persisted.map(\.outcome) == [.duplicateFinal(outcome: finalLine("m", "nacked"))])
        #expect(answered.journaled.isEmpty)
        #expect(try store.load(nowUnixMillis: 12_000).live.isEmpty)

        // Past the final retention the message_id is free again.
        let again = try store.commit(batch(inserting: ["m"]), nowUnixMillis: 2_000 + 10_001)
        #expect(again.persisted.map(\.outcome) == [.stored])
        #expect(try store.load(nowUnixMillis: 12_001).live.map(\.messageID) == ["m"])
    }

    @Test(arguments: StoreKind.allCases)
    func aSecondFinalEventForAMessageKeepsTheFirst(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory)
        defer { store.close() }
        _ = try store.commit(batch(inserting: ["m"]), nowUnixMillis: 1_000)

        let result = try store.commit(batch { b in
            b.record(final(1, "m", "acked"))
            b.record(final(2, "m", "expired"))
        }, nowUnixMillis: 2_000)
        #expect(result.journaled.map(\.line) == [finalLine("m", "acked")])
        #expect(result.duplicateFinalRecords == [2])
        #expect(result.recordedThrough == 2)
        let later = try store.commit(batch { $0.record(final(3, "m", "nacked")) }, nowUnixMillis: 3_000)
        #expect(later.journaled.isEmpty && later.duplicateFinalRecords == [3] && later.recordedThrough == 3)

        #expect(try store.commit(batch(inserting: ["m"]), nowUnixMillis: 4_000).persisted.map(\.outcome)
                == [.duplicateFinal(outcome: finalLine("m", "acked"))])
        #expect(try store.events(after: 0, limit: 10).map(\.line) == [acceptedLine("m"), finalLine("m", "acked")])
    }

    /// Retention 0 (what `--store memory` runs with): a final message answers a resubmission within its own
    /// millisecond only, its event stays in the journal as long; a later commit drops both. Over thousands of
    /// commits, so that the pruned prefixes are dropped in pieces; a message_id taken again after its final
    /// one was replaced stays live when the old final's turn to be pruned comes.
    @Test(arguments: StoreKind.allCases)
    func retentionZeroDropsFinalMessagesAndEventsAtTheNextMillisecond(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory, configuration: StoreConfiguration(finalRetentionMillis: 0, eventsRetentionMillis: 0))
        defer { store.close() }
        let count = kind == .memory ? 3_000 : 300
        for i in 0..<count {
            let now = Int64(1_000 + 2 * i)
            _ = try store.commit(batch { b in
                b.insert(insert("m-\(i)", at: now))
                b.record(final(UInt64(i + 1), "m-\(i)"))
            }, nowUnixMillis: now)
            #expect(try store.commit(batch(inserting: ["m-\(i)"], at: now), nowUnixMillis: now).persisted.map(\.outcome)
                    == [.duplicateFinal(outcome: finalLine("m-\(i)"))])
            #expect(try store.storedMessage("m-\(i)")?.finalEvent == finalLine("m-\(i)"))
            if i > 0 { #expect(try store.storedMessage("m-\(i - 1)") == nil) }
            #expect(try store.events(after: 0, limit: 10).map(\.line) == [acceptedLine("m-\(i)"), finalLine("m-\(i)")])
        }
        let last = Int64(1_000 + 2 * (count - 1))
        // The last one's id, taken again a millisecond later: stored (live), and still live after its old
        // final's turn to be pruned.
        #expect(try store.commit(batch(inserting: ["m-\(count - 1)"], at: last + 1), nowUnixMillis: last + 1).persisted.map(\.outcome)
                == [.stored])
        _ = try store.commit(batch(inserting: ["n"], at: last + 2), nowUnixMillis: last + 2)
        #expect(try store.load(nowUnixMillis: last + 2).live.map(\.messageID) == ["m-\(count - 1)", "n"])
        #expect(try store.events(after: 0, limit: 10).map(\.line) == [acceptedLine("n")])
    }

    @Test(arguments: StoreKind.allCases)
    func progressOfAFinalMessageIsIgnored(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory)
        defer { store.close() }
        var late = message("m")
        late.attempts = 4
        _ = try store.commit(batch { b in
            b.insert(insert("m"))
            b.insert(insert("n"))
            b.record(final(1, "m"))
            b.progress(late)
        }, nowUnixMillis: 1_000)
        #expect(try store.load(nowUnixMillis: 1_000).live.map(\.messageID) == ["n"])
    }

    @Test func progressInOneBatchKeepsTheLastPerMessage() {
        var first = message("m")
        first.attempts = 1
        var second = message("m")
        second.attempts = 2
        let b = batch { b in
            b.progress(first)
            b.record(final(1, "x"))
            b.progress(second)
        }
        #expect(b.operations == [.progress(second), .record(final(1, "x"))])
    }

    @Test(arguments: StoreKind.allCases)
    func eventsAreKeptUntilEveryConsumerAcknowledgedThem(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory, configuration: StoreConfiguration(eventsRetentionMillis: 1_000_000))
        defer { store.close() }
        _ = try store.commit(batch(inserting: ["a", "b", "c", "d", "e"]), nowUnixMillis: 1_000)

        // No registered consumer: only the age limit prunes.
        _ = try store.commit(batch(inserting: ["f"]), nowUnixMillis: 2_000)
        #expect(try store.events(after: 0, limit: 100).map(\.seq) == [1, 2, 3, 4, 5, 6])

        try store.acknowledgeEvents(consumer: "http", through: 3)
        try store.acknowledgeEvents(consumer: "audit", through: 0)
        _ = try store.commit(batch(inserting: ["g"]), nowUnixMillis: 3_000)
        #expect(try store.events(after: 0, limit: 100).map(\.seq) == [1, 2, 3, 4, 5, 6, 7])

        try store.acknowledgeEvents(consumer: "audit", through: 5)
        try store.acknowledgeEvents(consumer: "http", through: 2)  // a cursor never moves back
        _ = try store.commit(batch(inserting: ["h"]), nowUnixMillis: 4_000)
        #expect(try store.events(after: 0, limit: 100).map(\.seq) == [4, 5, 6, 7, 8])

        // The age limit passes, acknowledged or not.
        _ = try store.commit(batch(inserting: ["i"]), nowUnixMillis: 1_003_500)
        #expect(try store.events(after: 0, limit: 100).map(\.seq) == [8, 9])
    }

    @Test(arguments: StoreKind.allCases)
    func handedOverIDsAreKeptForTheDedupeWindow(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory, configuration: StoreConfiguration(dedupeWindowMillis: 600_000))
        defer { store.close() }
        let result = try store.commit(batch { b in
            b.record(upstream(1, "u1"))
            b.record(StoreBatch.Record(id: 2, line: #"{"event":"receipt"}"#, handedOverMessageID: "r1"))
        }, nowUnixMillis: 10_000)
        #expect(result.recordedThrough == 2)
        _ = try store.commit(batch { $0.record(upstream(3, "u2")) }, nowUnixMillis: 20_000)

        #expect(try store.load(nowUnixMillis: 20_000).handedOver == [
            HandedOverMessage(messageID: "r1", atUnixMillis: 10_000),
            HandedOverMessage(messageID: "u1", atUnixMillis: 10_000),
            HandedOverMessage(messageID: "u2", atUnixMillis: 20_000),
        ])
        #expect(try store.load(nowUnixMillis: 610_001).handedOver.map(\.messageID) == ["u2"])
    }

    @Test(arguments: StoreKind.allCases)
    func aClosedStoreThrows(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory)
        store.close()
        #expect(throws: StoreError.self) { try store.commit(batch(inserting: ["m"]), nowUnixMillis: 1) }
    }

    /// A final record with its message_id's hash given (as the daemon passes it on from the dispatcher) and one
    /// without (hashed by the store) are the same record and end the same message; a record whose id is
    /// changed afterwards drops the given hash.
    @Test(arguments: StoreKind.allCases)
    func aFinalFoundByItsGivenHashOrByHashingAgree(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let store = try kind.make(in: directory)
        defer { store.close() }
        _ = try store.commit(batch { b in
            b.insert(insert("a", at: 1_000, line: 1))
            b.insert(insert("b", at: 1_000, line: 2))
        }, nowUnixMillis: 2_000)
        let given = StoreBatch.Record(id: 1, line: finalLine("a"), finalMessageID: "a", finalMessageIDHash: SlotIndex.hash("a"))
        #expect(given == final(1, "a"))
        var moved = StoreBatch.Record(id: 2, line: finalLine("b"), finalMessageID: "a", finalMessageIDHash: SlotIndex.hash("a"))
        moved.finalMessageID = "b"
        let result = try store.commit(batch { b in
            b.record(given)
            b.record(moved)
        }, nowUnixMillis: 3_000)
        #expect(result.journaled.map(\.line) == [finalLine("a"), finalLine("b")])
        #expect(try store.storedMessage("a")?.finalEvent == finalLine("a"))
        #expect(try store.storedMessage("b")?.finalEvent == finalLine("b"))
    }
}

import CCS

/// The store of `--store memory` (tests, benchmarks): the same rules as `SQLiteMessageStore` (idempotent
/// inserts, first final event kept, journal seq, cursors, retention), kept in memory. Nothing survives the
/// process. Commits never fail.
public final class InMemoryMessageStore: MessageStore {
    fileprivate struct Entry {
        var record: MessageRecord
        var acceptSeq: Int64
        var finalEvent: EventText?
        var finalAt: Int64 = 0
    }

    /// A stored message: its id (and the id's hash, to leave the index without hashing again) and entry.
    fileprivate struct Slot {
        var id: String
        var hash: UInt32
        var entry: Entry
    }

    /// What the store holds. One struct, so a commit works on it through one access: a stored property of
    /// a class is checked for exclusive access on every touch (measured at about 1,000 instructions per
    /// message when the tables were properties of their own).
    fileprivate struct Tables {
        /// Messages (live, and final ones within the final retention) in slots that are reused once freed,
        /// found by message_id through `index`. A commit hashes a message_id once per operation (a progress
        /// operation not at all: its batch hashed it) and prunes a final message by its slot, without a hash.
        var slots: [Slot?] = []
        var freeSlots: [Int32] = []
        var index = SlotIndex()
        var journal: [JournaledEvent] = []   // seq order; `journalStart` is the oldest kept
        var journalStart = 0
        var handedOver: [String: Int64] = [:]
        /// Final messages and handed-over ids in the order they expire, so pruning looks at the front only.
        /// Final messages (by slot) from `finalStart` on (as the journal: read from a moving start, the pruned
        /// prefix dropped in one piece, not one element at a time).
        var finalOrder: [(slot: Int32, at: Int64)] = []
        var finalStart = 0
        var handedOverOrder = FIFO<(id: String, at: Int64)>()
        var cursors: [String: Int64] = [:]
        var lastSeq: Int64 = 0
    }

    public let configuration: StoreConfiguration
    private var tables = Tables()
    private var closed = false

    public init(configuration: StoreConfiguration = StoreConfiguration()) {
        self.configuration = configuration
    }

    private func checkOpen(_ operation: String) throws(StoreError) {
        if closed { throw StoreError(code: .other, path: "memory", operation: operation, message: "the store is closed") }
    }

    public func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot {
        try checkOpen("loading stored messages")
        let live = tables.slots.compactMap { $0?.entry }.filter { $0.finalEvent == nil }
            .sorted { $0.acceptSeq < $1.acceptSeq }
            .map { entry in
                // As `SQLiteMessageStore.load`: `acceptedAt` in seconds since 1970, for the dispatcher to rebase.
                let old = entry.record
                var record = MessageRecord(messageID: old.messageID, json: old.json, to: old.to, rateKey: old.rateKey,
                                           acceptedAt: Double(old.acceptedAtUnixMillis) / 1000,
                                           acceptedAtUnixMillis: old.acceptedAtUnixMillis,
                                           timeToLive: old.timeToLive)
                record.attempts = old.attempts
                record.sends = old.sends
                record.lastError = old.lastError
                return record
            }
        let since = nowUnixMillis - configuration.dedupeWindowMillis
        let ids = tables.handedOver.filter { $0.value >= since }
            .map { HandedOverMessage(messageID: $0.key, atUnixMillis: $0.value) }
            .sorted { ($0.atUnixMillis, $0.messageID) < ($1.atUnixMillis, $1.messageID) }
        return StoreSnapshot(live: live, handedOver: ids, lastSeq: tables.lastSeq)
    }

    public func commit(_ batch: StoreBatch, nowUnixMillis now: Int64) throws(StoreError) -> StoreCommitResult {
        try checkOpen("committing a batch")
        return tables.commit(batch, now: now, configuration: configuration)
    }

    public func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] {
        try checkOpen("reading the journal")
        let journal = tables.journal
        let start = journal[tables.journalStart...].firstIndex { $0.seq > seq } ?? journal.endIndex
        return Array(journal[start..<min(journal.endIndex, start + limit)])
    }

    public func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) {
        try checkOpen("acknowledging events")
        tables.cursors[consumer] = max(tables.cursors[consumer] ?? seq, seq)
    }

    public func cursor(of consumer: String) throws(StoreError) -> Int64? {
        try checkOpen("reading a consumer cursor")
        return tables.cursors[consumer]
    }

    public func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? {
        try checkOpen("reading a message")
        guard let slot = tables.slot(of: messageID, hash: SlotIndex.hash(messageID)),
              let entry = tables.slots[slot]?.entry else { return nil }
        return StoredMessage(messageID: messageID, acceptedAtUnixMillis: entry.record.acceptedAtUnixMillis,
                             attempts: entry.record.attempts, sends: entry.record.sends, lastError: entry.record.lastError, finalEvent: entry.finalEvent?.string,
                             finalAtUnixMillis: entry.finalEvent == nil ? 0 : entry.finalAt)
    }

    public func close() { closed = true }
}

extension InMemoryMessageStore.Tables {
    mutating func commit(_ batch: StoreBatch, now: Int64, configuration: StoreConfiguration) -> StoreCommitResult {
        var result = StoreCommitResult()
        // At most one journaled event and one persist result per operation: no growth while committing.
        result.journaled.reserveCapacity(batch.operations.count)
        result.persisted.reserveCapacity(batch.operations.count)
        let finalRetainedSince = now - configuration.finalRetentionMillis
        var progressCount = 0
        // Read by index: a for-in copied every operation out (and destroyed the copy).
        for operation in batch.operations.indices {
            switch batch.operations[operation] {
            case .insert(let insert):
                let id = insert.record.messageID
                let hash = insert.record.messageIDHash  // hashed once, when the record was made
                let outcome: PersistOutcome
                if let slot = slot(of: id, hash: hash) {
                    // Refused while live or while its final event is retained; a final message past its
                    // retention is replaced (the accepted event then gets seq `lastSeq + 1`).
                    let old = slots[slot]!.entry
                    if let finalEvent = old.finalEvent {
                        if old.finalAt >= finalRetainedSince {
                            outcome = .duplicateFinal(outcome: finalEvent.string)
                        } else {
                            slots[slot]!.entry = InMemoryMessageStore.Entry(record: insert.record,
                                                                            acceptSeq: lastSeq + 1)
                            outcome = .stored
                        }
                    } else {
                        outcome = .duplicateLive
                    }
                } else {
                    // Made where it is kept (a slot built first and stored then was copied and destroyed).
                    let position: Int
                    if let free = freeSlots.popLast() {
                        position = Int(free)
                        slots[position] = InMemoryMessageStore.Slot(
                            id: id, hash: hash,
                            entry: InMemoryMessageStore.Entry(record: insert.record, acceptSeq: lastSeq + 1))
                    } else {
                        position = slots.count
                        slots.append(InMemoryMessageStore.Slot(
                            id: id, hash: hash,
                            entry: InMemoryMessageStore.Entry(record: insert.record, acceptSeq: lastSeq + 1)))
                    }
                    index.insert(hash: hash, slot: Int32(position))
                    outcome = .stored
                }
                if outcome == .stored { _ = append(insert.acceptedText, now: now, to: &result) }
                result.persisted.append(PersistResult(messageID: id, line: insert.line, outcome: outcome))
            case .progress(let record):
                // Filed under the hash the batch computed when it coalesced the progress.
                let hash = batch.progressHashes[progressCount]
                progressCount += 1
                // In place: no copy of the entry.
                guard let slot = slot(of: record.messageID, hash: hash), slots[slot]!.entry.finalEvent == nil else {
                    continue
                }
                slots[slot]!.entry.record.attempts = record.attempts
                slots[slot]!.entry.record.sends = record.sends
                slots[slot]!.entry.record.lastError = record.lastError
            case .record(let record):
                result.recordedThrough = max(result.recordedThrough ?? record.id, record.id)
                if let id = record.finalMessageID, let slot = slot(of: id, hash: record.finalMessageIDHash!) {
                    guard slots[slot]!.entry.finalEvent == nil else {
                        result.duplicateFinalRecords.append(record.id)
                        continue
                    }
                    slots[slot]!.entry.finalEvent = record.text
                    slots[slot]!.entry.finalAt = now
                    finalOrder.append((Int32(slot), now))
                }
                if let id = record.handedOverMessageID {
                    handedOver[id] = now
                    handedOverOrder.append((id, now))
                }
                _ = append(record.text, now: now, to: &result)
            }
        }
        for (consumer, seq) in batch.eventCursors { cursors[consumer] = max(cursors[consumer] ?? seq, seq) }
        prune(now: now, configuration: configuration)
        return result
    }

    /// The slot holding message `id` (filed under `hash`, `SlotIndex.hash(id)`), or nil.
    func slot(of id: String, hash: UInt32) -> Int? {
        index.find(hash: hash) { slots[Int($0)]!.id == id }.map(Int.init)
    }

    private mutating func append(_ text: EventText, now: Int64, to result: inout StoreCommitResult) -> Int64 {
        lastSeq += 1
        let event = JournaledEvent(seq: lastSeq, timeUnixMillis: now, text: text)
        journal.append(event)
        result.journaled.append(event)
        return lastSeq
    }

    private mutating func prune(now: Int64, configuration: StoreConfiguration) {
        let finalCutoff = now - configuration.finalRetentionMillis
        while finalStart < finalOrder.count, finalOrder[finalStart].at < finalCutoff {
            let (slot, at) = (Int(finalOrder[finalStart].slot), finalOrder[finalStart].at)
            // The slot may have been replaced since (a resubmission past the retention) or freed and reused:
            // only a final message that became final at `at` goes.
            let finalSinceThen = slots[slot].flatMap {
                $0.entry.finalEvent != nil && $0.entry.finalAt == at ? $0.hash : nil
            }
            if let hash = finalSinceThen {
                index.remove(hash: hash, slot: Int32(slot))  // by slot: no hash, no comparison of ids
                slots[slot] = nil
                freeSlots.append(Int32(slot))
            }
            finalStart += 1
        }
        if finalStart == finalOrder.count {
            finalOrder.removeAll(keepingCapacity: true)
            finalStart = 0
        } else if finalStart > 1024, finalStart * 2 > finalOrder.count {
            finalOrder.removeFirst(finalStart)
            finalStart = 0
        }
        let dedupeCutoff = now - configuration.dedupeWindowMillis
        while let (id, at) = handedOverOrder.first, at < dedupeCutoff {
            _ = handedOverOrder.popFirst()
            if handedOver[id] == at { handedOver[id] = nil }
        }
        let acknowledged = cursors.values.min() ?? 0
        let eventsCutoff = now - configuration.eventsRetentionMillis
        while journalStart < journal.count,
              journal[journalStart].seq <= acknowledged || journal[journalStart].timeUnixMillis < eventsCutoff {
            journalStart += 1
        }
        if journalStart == journal.count {
            journal.removeAll(keepingCapacity: true)  // all pruned (retention 0: each commit): no move
            journalStart = 0
        } else if journalStart > 1024, journalStart * 2 > journal.count {
            journal.removeFirst(journalStart)
            journalStart = 0
        }
    }
}

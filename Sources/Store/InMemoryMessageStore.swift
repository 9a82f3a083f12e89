import CCS

/// The store of `--store memory` (tests, benchmarks): the same rules as `SQLiteMessageStore` (idempotent
/// inserts, first final event kept, journal seq, cursors, retention), kept in dictionaries. Nothing survives
/// the process. Commits never fail.
public final class InMemoryMessageStore: MessageStore {
    private struct Entry {
        var record: MessageRecord
        var acceptSeq: Int64
        var finalEvent: String?
        var finalAt: Int64 = 0
    }

    public let configuration: StoreConfiguration
    private var messages: [String: Entry] = [:]
    private var journal: [JournaledEvent] = []   // seq order; `journalStart` is the oldest kept
    private var journalStart = 0
    private var handedOver: [String: Int64] = [:]
    /// Final messages and handed-over ids in the order they expire, so pruning looks at the front only.
    private var finalOrder = FIFO<(id: String, at: Int64)>()
    private var handedOverOrder = FIFO<(id: String, at: Int64)>()
    private var cursors: [String: Int64] = [:]
    private var lastSeq: Int64 = 0
    private var closed = false

    public init(configuration: StoreConfiguration = StoreConfiguration()) {
        self.configuration = configuration
    }

    private func checkOpen(_ operation: String) throws(StoreError) {
        if closed { throw StoreError(code: .other, path: "memory", operation: operation, message: "the store is closed") }
    }

    public func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot {
        try checkOpen("loading stored messages")
        let live = messages.values.filter { $0.finalEvent == nil }.sorted { $0.acceptSeq < $1.acceptSeq }
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
        let ids = handedOver.filter { $0.value >= since }
            .map { HandedOverMessage(messageID: $0.key, atUnixMillis: $0.value) }
            .sorted { ($0.atUnixMillis, $0.messageID) < ($1.atUnixMillis, $1.messageID) }
        return StoreSnapshot(live: live, handedOver: ids, lastSeq: lastSeq)
    }

    public func commit(_ batch: StoreBatch, nowUnixMillis now: Int64) throws(StoreError) -> StoreCommitResult {
        try checkOpen("committing a batch")
        var result = StoreCommitResult()
        for item in batch.operations {
            switch item {
            case .insert(let insert):
                let id = insert.record.messageID
                var outcome = PersistOutcome.stored
                if let entry = messages[id] {
                    if let finalEvent = entry.finalEvent {
                        if entry.finalAt >= now - configuration.finalRetentionMillis {
                            outcome = .duplicateFinal(outcome: finalEvent)
                        }
                    } else {
                        outcome = .duplicateLive
                    }
                }
                if outcome == .stored {
                    let seq = append(insert.acceptedLine, now: now, to: &result)
                    messages[id] = Entry(record: insert.record,
                                         acceptSeq: seq)
                }
                result.persisted.append(PersistResult(messageID: id, line: insert.line, outcome: outcome))
            case .progress(let record):
                // In place: one lookup, no copy of the entry.
                guard let index = messages.index(forKey: record.messageID), messages.values[index].finalEvent == nil else { continue }
                messages.values[index].record.attempts = record.attempts
                messages.values[index].record.sends = record.sends
                messages.values[index].record.lastError = record.lastError
            case .record(let record):
                result.recordedThrough = max(result.recordedThrough ?? record.id, record.id)
                if let id = record.finalMessageID, let index = messages.index(forKey: id) {
                    guard messages.values[index].finalEvent == nil else {
                        result.duplicateFinalRecords.append(record.id)
                        continue
                    }
                    messages.values[index].finalEvent = record.line
                    messages.values[index].finalAt = now
                    finalOrder.append((id, now))
                }
                if let id = record.handedOverMessageID {
                    handedOver[id] = now
                    handedOverOrder.append((id, now))
                }
                _ = append(record.line, now: now, to: &result)
            }
        }
        for (consumer, seq) in batch.eventCursors { cursors[consumer] = max(cursors[consumer] ?? seq, seq) }
        prune(now: now)
        return result
    }

    private func append(_ line: String, now: Int64, to result: inout StoreCommitResult) -> Int64 {
        lastSeq += 1
        let event = JournaledEvent(seq: lastSeq, timeUnixMillis: now, line: line)
        journal.append(event)
        result.journaled.append(event)
        return lastSeq
    }

    private func prune(now: Int64) {
        let finalCutoff = now - configuration.finalRetentionMillis
        while let (id, at) = finalOrder.first, at < finalCutoff {
            _ = finalOrder.popFirst()
            if let index = messages.index(forKey: id), messages.values[index].finalEvent != nil, messages.values[index].finalAt == at {
                messages.remove(at: index)  // one lookup
            }
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
        if journalStart > 1024, journalStart * 2 > journal.count {
            journal.removeFirst(journalStart)
            journalStart = 0
        }
    }

    public func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] {
        try checkOpen("reading the journal")
        let start = journal[journalStart...].firstIndex { $0.seq > seq } ?? journal.endIndex
        return Array(journal[start..<min(journal.endIndex, start + limit)])
    }

    public func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) {
        try checkOpen("acknowledging events")
        cursors[consumer] = max(cursors[consumer] ?? seq, seq)
    }

    public func cursor(of consumer: String) throws(StoreError) -> Int64? {
        try checkOpen("reading a consumer cursor")
        return cursors[consumer]
    }

    public func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? {
        try checkOpen("reading a message")
        guard let entry = messages[messageID] else { return nil }
        return StoredMessage(messageID: messageID, acceptedAtUnixMillis: entry.record.acceptedAtUnixMillis,
                             attempts: entry.record.attempts, sends: entry.record.sends, lastError: entry.record.lastError, finalEvent: entry.finalEvent,
                             finalAtUnixMillis: entry.finalEvent == nil ? 0 : entry.finalAt)
    }

    public func close() { closed = true }
}

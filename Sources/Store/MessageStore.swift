import CCS

/// Where accepted downstream messages, the events journal and the upstream dedupe state are kept, so that a
/// restart resumes what was not final (issue 8).
///
/// Calls come from one thread at a time: the `StoreWriter`'s queue, since a store may block on disk, or the
/// event loop itself for a store that never blocks (`StoreWriter.Configuration.commitsOnLoop`, by default
/// `InMemoryMessageStore` only). `SQLiteMessageStore` is durable; `InMemoryMessageStore` keeps nothing across
/// a restart.
public protocol MessageStore: AnyObject {
    /// What a restart resumes: live messages in accept order, the upstream ids handed over within the dedupe
    /// window, and the last journal sequence number. `nowUnixMillis` is the wall clock (ms since 1970).
    /// - Throws: `StoreError` naming the database path and SQLite's message.
    func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot
    /// Applies `batch` in one transaction, all or nothing, in the order its operations were added.
    /// An empty batch writes a probe (the writer uses it to learn that a failed disk takes writes again).
    /// - Throws: `StoreError`; on a throw nothing of the batch is kept and nothing committed before is lost.
    func commit(_ batch: StoreBatch, nowUnixMillis: Int64) throws(StoreError) -> StoreCommitResult
    /// Journaled events with `seq > after`, in seq order, at most `limit` (the HTTP event feed reads these).
    func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent]
    /// Registers `consumer` (first call) and records that it has everything up to `seq`: events are kept
    /// until every registered consumer acknowledged them, and at most `eventsRetention`.
    /// A cursor never moves back.
    func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError)
    /// The seq `consumer` acknowledged last, or nil when it never did.
    func cursor(of consumer: String) throws(StoreError) -> Int64?
    /// The message `messageID` as stored (live or final within the final retention), or nil when the store
    /// does not have it (never accepted, or pruned).
    func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage?
    /// Resizes the store's page cache to `kib` KiB (SQLite's `PRAGMA cache_size`; `StoreConfiguration
    /// .pageCacheKiB` at open). A store without one ignores it (the default implementation).
    /// - Throws: `StoreError` naming the database path and SQLite's message.
    func setPageCache(kib: Int) throws(StoreError)
    /// Releases the database and the directory lock. Further calls throw.
    func close()
}

extension MessageStore {
    /// No page cache: nothing to resize.
    public func setPageCache(kib: Int) throws(StoreError) {}
}

/// An upstream message or receipt whose event was written, remembered for the dedupe window.
public struct HandedOverMessage: Sendable, Equatable {
    public var messageID: String
    /// When it was handed over, milliseconds since 1970.
    public var atUnixMillis: Int64

    public init(messageID: String, atUnixMillis: Int64) {
        self.messageID = messageID
        self.atUnixMillis = atUnixMillis
    }
}

/// What a restart resumes (`MessageStore.load`).
public struct StoreSnapshot: Sendable, Equatable {
    /// Messages that are not final, in accept order, with attempts, sends and lastError as last saved.
    /// `acceptedAtUnixMillis` is the wall clock at intake (the time_to_live clock across restarts);
    /// `acceptedAt` is the same instant in seconds since 1970, for the driver to rebase onto its monotonic
    /// clock before `Dispatcher.restore`.
    public var live: [MessageRecord]
    /// Upstream ids handed over within the dedupe window, oldest first.
    public var handedOver: [HandedOverMessage]
    /// The highest journal sequence number ever given (0 for a new store); the next event gets a higher one.
    public var lastSeq: Int64

    public init(live: [MessageRecord], handedOver: [HandedOverMessage], lastSeq: Int64) {
        self.live = live
        self.handedOver = handedOver
        self.lastSeq = lastSeq
    }
}

/// One group commit: operations in the order the dispatcher asked for them.
public struct StoreBatch: Sendable, Equatable {
    /// A newly submitted message and its `accepted` event (journaled in the same transaction).
    public struct Insert: Sendable, Equatable {
        /// The message; its `acceptedAtUnixMillis` (wall clock at intake) is stored as the time_to_live clock.
        public var record: MessageRecord
        /// The intake line number, echoed in the persist result.
        public var line: Int?
        /// The `accepted` event as a JSON object text, without `seq` and `time`.
        public var acceptedText: EventText

        public init(record: MessageRecord, line: Int?, acceptedLine: String) {
            self.init(record: record, line: line, acceptedText: EventText(acceptedLine))
        }

        public init(record: MessageRecord, line: Int?, acceptedText: EventText) {
            self.record = record
            self.line = line
            self.acceptedText = acceptedText
        }
    }

    /// An event to journal, possibly ending a downstream message or handing over an upstream one.
    public struct Record: Sendable, Equatable {
        /// The dispatcher's increasing record id (`recorded(through:)`).
        public var id: UInt64
        /// The event as a JSON object text, without `seq` and `time`.
        public var text: EventText
        /// `text` as a `String`.
        public var line: String {
            get { text.string }
            set { text = EventText(newValue) }
        }
        /// The downstream message this event ends: marked final in the same transaction. If the message is
        /// already final, the event is not journaled (the first final event is kept).
        public var finalMessageID: String? { didSet { knownFinalHash = nil } }
        /// `SlotIndex.hash(finalMessageID)` as the dispatcher had it, if it was given (dropped when the id
        /// changes); not part of equality.
        private var knownFinalHash: UInt32?
        /// The upstream message or receipt this event hands over: remembered for dedupe.
        public var handedOverMessageID: String?

        /// `SlotIndex.hash(finalMessageID)`, hashed only when it was not given; nil without a final message.
        var finalMessageIDHash: UInt32? {
            guard let id = finalMessageID else { return nil }
            return knownFinalHash ?? SlotIndex.hash(id)
        }

        public static func == (lhs: Record, rhs: Record) -> Bool {
            lhs.id == rhs.id && lhs.text == rhs.text && lhs.finalMessageID == rhs.finalMessageID
                && lhs.handedOverMessageID == rhs.handedOverMessageID
        }
    }

    public enum Operation: Sendable, Equatable {
        case insert(Insert)
        /// attempts / sends / lastError of a live message changed (not gating; last one per message wins).
        case progress(MessageRecord)
        case record(Record)
    }

    public private(set) var operations: [Operation] = []
    /// Consumer cursors to move forward in the same transaction (`MessageStore.acknowledgeEvents`), highest
    /// seq per consumer. A batch holding only these is not empty (it is no probe).
    public private(set) var eventCursors: [String: Int64] = [:]
    /// Where the pending progress of each message sits in `operations`, so a newer one replaces it.
    private var progressIndex = SlotIndex()
    /// The message_id hash (`SlotIndex.hash`) of each progress operation, in the order they sit in
    /// `operations`: the memory store's commit files them under the same hash without hashing again.
    private(set) var progressHashes: [UInt32] = []

    public init() {}

    /// An empty batch with room for `operations` operations (and as many progress entries) before it grows.
    public init(reservingCapacity operations: Int) {
        self.operations.reserveCapacity(operations)
        progressIndex = SlotIndex(minimumCapacity: operations)
        progressHashes.reserveCapacity(operations)
    }

    public var isEmpty: Bool { operations.isEmpty && eventCursors.isEmpty }
    public var count: Int { operations.count }

    /// Records that `consumer` has every event up to `seq` (kept at the highest seq given).
    public mutating func acknowledgeEvents(consumer: String, through seq: Int64) {
        eventCursors[consumer] = max(eventCursors[consumer] ?? seq, seq)
    }

    public mutating func insert(_ insert: consuming Insert) { operations.append(.insert(insert)) }

    public mutating func progress(_ record: consuming MessageRecord) {
        // The record's message_id hash, kept for the memory store's commit.
        let id = record.messageID
        let hash = record.messageIDHash
        if let index = progressIndex.find(hash: hash, isKey: { operations[Int($0)].progressMessageID == id }) {
            operations[Int(index)] = .progress(record)
        } else {
            progressIndex.insert(hash: hash, slot: Int32(operations.count))
            progressHashes.append(hash)
            operations.append(.progress(record))
        }
    }

    public mutating func record(_ record: consuming Record) { operations.append(.record(record)) }

    /// Whether the batch holds a progress operation.
    var hasProgress: Bool { !progressHashes.isEmpty }

    /// Where the pending progress of `messageID` sits in `operations` (there is at most one per message);
    /// `hash` is its `SlotIndex.hash` as already known (a record's `messageIDHash`, a final record's
    /// `finalMessageIDHash`), so nothing is hashed again.
    func progressOperationIndex(of messageID: String, hash: UInt32) -> Int? {
        progressIndex.find(hash: hash, isKey: { operations[Int($0)].progressMessageID == messageID }).map { Int($0) }
    }

    /// Appends the operations of `other` after this batch's (progress still coalesced per message).
    public mutating func append(contentsOf other: StoreBatch) {
        for (consumer, seq) in other.eventCursors { acknowledgeEvents(consumer: consumer, through: seq) }
        for operation in other.operations {
            switch operation {
            case .insert(let value): insert(value)
            case .progress(let value): progress(value)
            case .record(let value): record(value)
            }
        }
    }

    /// The same batch without its inserts (what the writer retries after a retryable failure: submitters
    /// of the inserts are answered `failed` at once instead of waiting for the disk).
    public var withoutInserts: StoreBatch {
        var batch = StoreBatch()
        batch.eventCursors = eventCursors
        for operation in operations {
            switch operation {
            case .insert: continue
            case .progress(let value): batch.progress(value)
            case .record(let value): batch.record(value)
            }
        }
        return batch
    }

    /// Inserts of the batch, in order.
    public var inserts: [Insert] {
        operations.compactMap { if case .insert(let value) = $0 { value } else { nil } }
    }

    public static func == (lhs: StoreBatch, rhs: StoreBatch) -> Bool {
        lhs.operations == rhs.operations && lhs.eventCursors == rhs.eventCursors
    }
}

extension StoreBatch.Record {
    /// `finalMessageIDHash`, when given, must be `SlotIndex.hash(finalMessageID)` (`RecordRequest` carries it).
    public init(id: UInt64, line: String, finalMessageID: String? = nil, finalMessageIDHash: UInt32? = nil,
                handedOverMessageID: String? = nil) {
        self.init(id: id, text: EventText(line), finalMessageID: finalMessageID, finalMessageIDHash: finalMessageIDHash,
                  handedOverMessageID: handedOverMessageID)
    }

    /// `finalMessageIDHash`, when given, must be `SlotIndex.hash(finalMessageID)` (`RecordRequest` carries it).
    public init(id: UInt64, text: EventText, finalMessageID: String? = nil, finalMessageIDHash: UInt32? = nil,
                handedOverMessageID: String? = nil) {
        // The synthesized memberwise initializer (these initializers are in an extension so that it
        // exists): assigning the fields one by one built the record, copied it and destroyed the first
        // (about 290 instructions per record).
        self.init(id: id, text: text, finalMessageID: finalMessageID,
                  knownFinalHash: finalMessageID == nil ? nil : finalMessageIDHash,
                  handedOverMessageID: handedOverMessageID)
        assert(finalMessageID == nil || finalMessageIDHash == nil || finalMessageID.map(SlotIndex.hash) == finalMessageIDHash,
               "a final message_id's hash that is not its own")
    }
}

extension StoreBatch {
    /// What a progress operation writes: a live message's attempts, sends and last error.
    struct ProgressFields {
        var attempts: Int
        var sends: Int
        var lastError: String?
    }
}

extension StoreBatch.Operation {
    /// The message_id of a progress operation (nil for the others).
    fileprivate var progressMessageID: String? {
        if case .progress(let record) = self { record.messageID } else { nil }
    }

    /// The fields a progress operation writes (nil for the others).
    var progressFields: StoreBatch.ProgressFields? {
        if case .progress(let record) = self {
            StoreBatch.ProgressFields(attempts: record.attempts, sends: record.sends, lastError: record.lastError)
        } else {
            nil
        }
    }
}

/// An event as the journal keeps it.
public struct JournaledEvent: Sendable, Equatable {
    /// Increasing across the store's life (never reused, not even after pruning or a restart).
    public var seq: Int64
    /// Wall clock when it was journaled, milliseconds since 1970.
    public var timeUnixMillis: Int64
    /// The event's JSON object text, without `seq` and `time`.
    public var text: EventText
    /// `text` as a `String`.
    public var line: String {
        get { text.string }
        set { text = EventText(newValue) }
    }

    public init(seq: Int64, timeUnixMillis: Int64, line: String) {
        self.init(seq: seq, timeUnixMillis: timeUnixMillis, text: EventText(line))
    }

    public init(seq: Int64, timeUnixMillis: Int64, text: EventText) {
        self.seq = seq
        self.timeUnixMillis = timeUnixMillis
        self.text = text
    }
}

/// What one commit did.
public struct StoreCommitResult: Sendable, Equatable {
    /// One per insert, in batch order.
    public var persisted: [PersistResult]
    /// Every event journaled by the commit, in seq order (accepted events and records interleaved as
    /// the batch had them).
    public var journaled: [JournaledEvent]
    /// The highest record id of the batch (nil when it had no record): every record up to it is done.
    public var recordedThrough: UInt64?
    /// Record ids whose event was not journaled because their message already had a final event.
    public var duplicateFinalRecords: [UInt64]

    public init(persisted: [PersistResult] = [], journaled: [JournaledEvent] = [],
                recordedThrough: UInt64? = nil, duplicateFinalRecords: [UInt64] = []) {
        self.persisted = persisted
        self.journaled = journaled
        self.recordedThrough = recordedThrough
        self.duplicateFinalRecords = duplicateFinalRecords
    }
}

/// The dispatcher's live set in one table: every message submitted and not yet out (persisting,
/// outstanding, finalizing), each in a slot with its record and its place.
///
/// Queues, timers and releases hold a `Handle` (slot and generation), so moving a message along its path
/// touches no `String`-keyed map; the one index by message_id (`SlotIndex`) serves the lookups that arrive
/// with a message_id (intake duplicates, acks, nacks, status). A message_id is hashed once as it enters
/// (`insert`) and once per lookup; leaving (`remove`) goes by the hash kept with the slot. A slot is reused once its message leaves; its
/// generation then changes, so a handle left behind in a queue or timer finds nothing instead of the slot's
/// next message.
struct LiveTable: Sendable {
    /// A live message's compact handle: its slot, and the slot's generation when the message took it.
    struct Handle: Sendable, Equatable {
        let slot: Int32
        let generation: UInt32
    }

    /// Where a message on the wire sits in its session (`CCSSession.inFlightHandles`): the connection, and its
    /// position there. Kept apart from `place`, since a message may become final while still on the wire.
    struct Wire: Sendable, Equatable {
        var connection: Int
        var position: Int32
    }

    struct Entry: Sendable {
        var record: MessageRecord
        var place: Dispatcher.Place
        /// While the message is in flight on a session (sent, no ack, nack or end of its connection yet):
        /// `wirePosition` >= 0 (`wire`). Not an optional `Wire`: that made every copy of an entry go
        /// through the runtime's enum-tag functions.
        var wireConnection = 0
        var wirePosition: Int32 = -1
        /// The message's rate key (`RateLimit.added`), while it is outstanding.
        var rateKey = RateLimit.Key.none
        /// False in a free slot.
        var isOccupied = true

        var wire: Wire? { wirePosition >= 0 ? Wire(connection: wireConnection, position: wirePosition) : nil }
    }

    /// By slot; a free slot holds `vacant` (not optionals: unwrapping an element copied the whole entry).
    private var entries: [Entry] = []
    private static let vacant = Entry(
        record: MessageRecord(messageID: "", json: "", to: "", rateKey: "", acceptedAt: 0, acceptedAtUnixMillis: 0, timeToLive: 0),
        place: .finalizing, isOccupied: false)
    private var generations: [UInt32] = []
    /// Each slot's message_id hash (`SlotIndex.hash`), kept for its removal from `index`.
    private var hashes: [UInt32] = []
    private var freeSlots: [Int32] = []
    private var index = SlotIndex()

    /// Messages in the table.
    var count: Int { index.count }

    /// Bytes of JSON text (`MessageRecord.json`, UTF-8) of the messages in the table, kept as they come and go.
    private(set) var jsonBytes = 0

    /// The message_ids in the table, in no order.
    var messageIDs: [String] { entries.filter(\.isOccupied).map(\.record.messageID) }

    /// The handle of live message `messageID`, or nil.
    func handle(_ messageID: String) -> Handle? {
        guard let slot = slot(of: messageID, hash: SlotIndex.hash(messageID)) else { return nil }
        return Handle(slot: slot, generation: generations[Int(slot)])
    }

    private func slot(of messageID: String, hash: UInt32) -> Int32? {
        index.find(hash: hash) { entries[Int($0)].record.messageID == messageID }
    }

    /// True while the message a handle names is in the table.
    func isLive(_ handle: Handle) -> Bool { generations[Int(handle.slot)] == handle.generation }

    /// The place of the message a handle names; nil once it left the table.
    func place(of handle: Handle) -> Dispatcher.Place? {
        generations[Int(handle.slot)] == handle.generation ? entries[Int(handle.slot)].place : nil
    }

    /// The record of the message a handle names; nil once it left the table.
    func record(of handle: Handle) -> MessageRecord? {
        generations[Int(handle.slot)] == handle.generation ? entries[Int(handle.slot)].record : nil
    }

    /// True when the message a handle names is in the table with message_id `messageID`.
    func holds(_ handle: Handle, messageID: String) -> Bool {
        generations[Int(handle.slot)] == handle.generation && entries[Int(handle.slot)].record.messageID == messageID
    }

    /// The entry a handle names; nil once its message left the table.
    subscript(handle: Handle) -> Entry? {
        generations[Int(handle.slot)] == handle.generation ? entries[Int(handle.slot)] : nil as Entry?
    }

    /// The entry of live message `messageID`, or nil.
    func entry(_ messageID: String) -> Entry? {
        guard let slot = slot(of: messageID, hash: SlotIndex.hash(messageID)) else { return nil }
        return entries[Int(slot)]
    }

    /// Adds a message whose message_id is not in the table (by the hash its record carries); nil, and nothing
    /// changed, when it is.
    mutating func insert(_ record: MessageRecord, place: Dispatcher.Place) -> Handle? {
        let hash = record.messageIDHash
        guard slot(of: record.messageID, hash: hash) == nil else { return nil }
        let slot = freeSlots.popLast() ?? Int32(entries.count)
        if Int(slot) == entries.count {
            entries.append(Entry(record: record, place: place, isOccupied: true))
            generations.append(0)
            hashes.append(hash)
        } else {
            entries[Int(slot)] = Entry(record: record, place: place, isOccupied: true)
            hashes[Int(slot)] = hash
        }
        index.insert(hash: hash, slot: slot)
        jsonBytes += record.jsonUTF8.count
        return Handle(slot: slot, generation: generations[Int(slot)])
    }

    /// Moves a live message to `place`. The handle must be current.
    mutating func setPlace(_ place: Dispatcher.Place, of handle: Handle) {
        precondition(generations[Int(handle.slot)] == handle.generation, "stale handle")
        entries[Int(handle.slot)].place = place
    }

    /// Changes a live message's record in place. The handle must be current.
    mutating func updateRecord(of handle: Handle, _ change: (inout MessageRecord) -> Void) {
        precondition(generations[Int(handle.slot)] == handle.generation, "stale handle")
        let before = entries[Int(handle.slot)].record.jsonUTF8.count
        change(&entries[Int(handle.slot)].record)
        jsonBytes += entries[Int(handle.slot)].record.jsonUTF8.count - before
    }

    /// Sets where a live message sits on the wire (nil: not in flight any more). The handle must be current.
    mutating func setWire(_ wire: Wire?, of handle: Handle) {
        precondition(generations[Int(handle.slot)] == handle.generation, "stale handle")
        entries[Int(handle.slot)].wireConnection = wire?.connection ?? 0
        entries[Int(handle.slot)].wirePosition = wire?.position ?? -1
    }

    /// The wire position of a live message, or nil (not on the wire, or the handle is stale).
    func wire(of handle: Handle) -> Wire? {
        generations[Int(handle.slot)] == handle.generation ? entries[Int(handle.slot)].wire : nil
    }

    /// Sets the rate key of a live message. The handle must be current.
    mutating func setRateKey(_ key: RateLimit.Key, of handle: Handle) {
        precondition(generations[Int(handle.slot)] == handle.generation, "stale handle")
        entries[Int(handle.slot)].rateKey = key
    }

    /// The rate key of the message a handle names (`RateLimit.Key.none` once it left the table).
    func rateKey(of handle: Handle) -> RateLimit.Key {
        generations[Int(handle.slot)] == handle.generation ? entries[Int(handle.slot)].rateKey : .none
    }

    /// Counts one more send of a live message (its JSON, and so `jsonBytes`, unchanged). The handle must be current.
    mutating func countSend(of handle: Handle) {
        precondition(generations[Int(handle.slot)] == handle.generation, "stale handle")
        entries[Int(handle.slot)].record.sends += 1
    }

    /// Takes a message out of the table; its handles find nothing from now on. Returns where it was on the
    /// wire, if it still was. The handle must be current.
    @discardableResult
    mutating func remove(_ handle: Handle) -> Wire? {
        let slot = Int(handle.slot)
        precondition(generations[slot] == handle.generation, "stale handle")
        index.remove(hash: hashes[slot], slot: handle.slot)
        // Swapped out, not read in place: reading its fields in the array copied the whole entry, twice.
        var removed = Self.vacant
        swap(&removed, &entries[slot])
        jsonBytes -= removed.record.jsonUTF8.count
        let wire = removed.wire
        generations[slot] &+= 1
        freeSlots.append(handle.slot)
        return wire
    }
}

/// An event to journal (`DispatcherAction.record`). Ids are assigned by the dispatcher in increasing
/// order from 1; the store commits them in that order, so `Dispatcher.recorded(through:now:)` with one id
/// confirms every request up to it.
public struct RecordRequest: Sendable, Equatable {
    public let id: UInt64
    public let event: DispatcherEvent
    /// The downstream message this event ends (acked, nacked final, expired): mark it final in the same
    /// transaction. The store keeps the first final event of a message_id and refuses a second.
    public let finalMessageID: String?
    /// `SlotIndex.hash(finalMessageID)` (0 without one): the memory store finds the message by it, unhashed again.
    public let finalMessageIDHash: UInt32
    /// The upstream message or receipt this event hands over: remember it for dedupe in the same transaction.
    /// It is the dedupe key (`UpstreamMessageID.key`): the message_id, or, for one that held unpaired
    /// surrogate escapes, U+FFFD and its JSON literal. `Dispatcher.restore` takes these keys back as they are.
    public let handedOverMessageID: String?

    /// `finalMessageIDHash`, when given, must be `SlotIndex.hash(finalMessageID)` (a record's `messageIDHash`);
    /// it is computed when not given.
    public init(id: UInt64, event: DispatcherEvent, finalMessageID: String? = nil, finalMessageIDHash: UInt32? = nil,
                handedOverMessageID: String? = nil) {
        self.id = id
        self.event = event
        self.finalMessageID = finalMessageID
        self.finalMessageIDHash = finalMessageIDHash ?? finalMessageID.map(SlotIndex.hash) ?? 0
        assert(finalMessageID == nil || finalMessageIDHash == nil || finalMessageID.map(SlotIndex.hash) == finalMessageIDHash,
                   "a final message_id's hash that is not its own")
        self.handedOverMessageID = handedOverMessageID
    }

    /// Its fields, moved out rather than copied (a driver hands the message_ids on to its store).
    public consuming func parts() -> (id: UInt64, event: DispatcherEvent, finalMessageID: String?, handedOverMessageID: String?) {
        (id, event, finalMessageID, handedOverMessageID)
    }
}

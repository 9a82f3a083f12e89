/// Where one live message is, for `GET /v1/messages/{id}` (a read; the dispatcher does not change).
public struct MessageStatus: Sendable, Equatable {
    /// `persisting` (submitted, insert not committed), `queued` (waiting for a window), `in_flight` (sent, no
    /// ack or nack yet), `waiting_retry` (a retryable nack or rate limit: backing off), `finalizing` (its final
    /// event is being recorded).
    public let state: String
    /// The connection it is in flight on, while `in_flight`.
    public let connection: Int?
    public let record: MessageRecord
}

extension Dispatcher {
    /// The live message `messageID` (submitted and not yet out of the live set), or nil.
    public func status(of messageID: String) -> MessageStatus? {
        guard let entry = table.entry(messageID) else { return nil }
        let (record, place) = (entry.record, entry.place)
        switch place {
        case .persisting: return MessageStatus(state: "persisting", connection: nil, record: record)
        case .queued: return MessageStatus(state: "queued", connection: nil, record: record)
        case .inFlight(let connection): return MessageStatus(state: "in_flight", connection: connection, record: record)
        case .retryWait, .rateLimited: return MessageStatus(state: "waiting_retry", connection: nil, record: record)
        case .finalizing: return MessageStatus(state: "finalizing", connection: nil, record: record)
        }
    }
}

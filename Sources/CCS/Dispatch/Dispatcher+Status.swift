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

extension Dispatcher {
    /// The figures a driver reads after each call (`gauges()`): intake room, the wake timer, the lifecycle's counts.
    public struct Gauges: Sendable, Equatable {
        /// `outstanding`: messages in the live set.
        public let outstanding: Int
        /// `liveJSONBytes`: bytes of JSON text in the live set.
        public let liveJSONBytes: Int
        /// `nextWakeup`: the earliest time `tick` has work (dispatcher clock, seconds), if any.
        public let nextWakeup: Double?
        /// `isQuiescent`: nothing in flight or persisting, and no unconfirmed record that releases something.
        public let isQuiescent: Bool
        /// `inFlight`: downstream messages on the wire and not yet answered.
        public let inFlight: Int
        /// `stopReason != nil`: an authentication failure stopped the pool.
        public let isStopped: Bool
    }

    /// `outstanding`, `liveJSONBytes`, `nextWakeup`, `isQuiescent`, `inFlight` and whether it stopped, in one
    /// read. `mutating` only so that a driver keeping the dispatcher in a class passes it by address: calling
    /// a non-mutating member on a class's stored struct from another module copies the whole dispatcher
    /// (about 800 bytes) first, measured at about 110 instructions per read, several reads per message.
    public mutating func gauges() -> Gauges {
        Gauges(outstanding: outstanding, liveJSONBytes: liveJSONBytes, nextWakeup: nextWakeup, isQuiescent: isQuiescent,
               inFlight: inFlight, isStopped: stopReason != nil)
    }
}

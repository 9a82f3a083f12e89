/// Upstream backpressure: how many ACKs a connection is owed.
extension Dispatcher {
    /// Upstream messages and receipts that arrived on connection `id` and whose ACK waits for their event
    /// to be recorded (handed over; ccs-protocol.md §3: ACK only after the hand-over), redeliveries of them
    /// included. 0 for an unknown connection. The daemon stops reading a connection while this is at its
    /// `max_pending_upstream`, so that a flood of upstream cannot grow memory faster than the store takes it.
    public func acksOwed(on id: Int) -> Int {
        acksOwedByConnection[id] ?? 0
    }

    /// Counts one more ACK owed on connection `id` (`acksOwedInAll` follows).
    mutating func oweAck(on id: Int) {
        acksOwedByConnection[id, default: 0] += 1
        acksOwedInAll += 1
    }

    /// One ACK owed on connection `id` was released (or dropped with its connection).
    mutating func paidAck(on id: Int) {
        guard let owed = acksOwedByConnection[id] else { return }
        acksOwedByConnection[id] = owed > 1 ? owed - 1 : nil
        acksOwedInAll -= 1
    }
}

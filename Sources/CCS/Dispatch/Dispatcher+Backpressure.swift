/// Upstream backpressure: how many ACKs a connection is owed.
extension Dispatcher {
    /// Upstream messages and receipts that arrived on connection `id` and whose ACK waits for their event
    /// to be recorded (handed over; ccs-protocol.md §3: ACK only after the hand-over), redeliveries of them
    /// included. 0 for an unknown connection. The daemon stops reading a connection while this is at its
    /// `max_pending_upstream`, so that a flood of upstream cannot grow memory faster than the store takes it.
    public func acksOwed(on id: Int) -> Int {
        acksOwedByConnection[id] ?? 0
    }
}

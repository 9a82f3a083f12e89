import TimerHeap
/// A new configuration while the pool runs (a reload): the connection count and the policy settings.
extension Dispatcher {
    /// Applies `new` from now on.
    ///
    /// - More connections: the new slots open at once on the primary endpoint.
    /// - Fewer: the highest slots leave the pool. A connection still logging in, or with nothing in flight,
    ///   closes at once; a ready one stops taking messages (it drains, like after CONNECTION_DRAINING) and
    ///   closes once its last message in flight is acked or nacked, or after `drainTimeout`, when what is
    ///   still in flight is resent on the other connections (`connectionEnded`). Nothing is dropped.
    /// - `window` applies to connections opened from now on; backoffs, `maxAttempts`, `ackTimeout` and
    ///   `drainTimeout` to every decision from now on.
    ///
    /// - Precondition: `new.endpoints` equals the running ones (a reload refuses other endpoints).
    ///   `upstreamDedupeWindow`, `seed` and `keepsMessagesOnStop` keep their running values.
    public mutating func reconfigure(_ new: DispatcherConfiguration, now: Double) -> [DispatcherAction] {
        precondition(new.endpoints == configuration.endpoints, "reconfigure cannot change the endpoints")
        var next = new
        next.upstreamDedupeWindow = configuration.upstreamDedupeWindow
        next.seed = configuration.seed
        next.keepsMessagesOnStop = configuration.keepsMessagesOnStop
        configuration = next
        retiring = retiring.filter { sessions[$0.key] != nil }
        var actions: [DispatcherAction] = []
        // Not started yet: `start` opens the new count. Closing: nothing opens any more.
        guard !slots.isEmpty, !isClosing else { return actions }
        if next.connections > slots.count {
            for index in slots.count..<next.connections {
                slots.append(Slot(endpointIndex: 0))
                open(slot: index, initial: true, actions: &actions)
            }
        } else if next.connections < slots.count {
            for index in (next.connections..<slots.count).reversed() {
                if let id = slots[index].connection {
                    slotOfConnection[id] = nil
                    retire(id, now: now, actions: &actions)
                }
            }
            slots.removeLast(slots.count - next.connections)
            let kept = next.connections
            timers.compact { timer in
                if case .reconnect(let slot) = timer { return slot < kept }
                return true
            }
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Takes connection `id` (already out of its slot) out of the pool without losing a message: it drains,
    /// then closes once nothing is in flight on it and the ACKs owed on it went out (`closeIfRetiredAndIdle`),
    /// or at `drainTimeout` (`.drainDeadline`), when `connectionEnded` resends what is left.
    mutating func retire(_ id: Int, now: Double, actions: inout [DispatcherAction]) {
        guard var session = sessions[id] else { return }
        let inFlight = session.window.inFlight
        _ = session.startDraining()
        sessions[id] = session
        actions.append(.log(DispatcherLog(.info, "connection leaving the pool (fewer connections configured)", [
            ("connection", "\(id)"), ("in_flight", "\(inFlight)")])))
        retiring[id] = .some(nil)
        timers.schedule(at: now + configuration.drainTimeout, .drainDeadline(connection: id))
        closeIfRetiredAndIdle(id, actions: &actions)
    }

    /// A retiring connection with nothing in flight closes, once every record made so far is confirmed: the
    /// ACKs of upstream messages and receipts that arrived on it are released by those records and must go
    /// out on it first (ccs-protocol.md §3).
    mutating func closeIfRetiredAndIdle(_ id: Int, actions: inout [DispatcherAction]) {
        guard case .some(.none) = retiring[id], let session = sessions[id], session.window.inFlight == 0 else { return }
        retiring[id] = .some(lastRecordID)
        closeRetiredOnceRecorded(actions: &actions)
    }

    /// Closes the idle retiring connections whose owed ACKs are released (`recorded(through:)`).
    mutating func closeRetiredOnceRecorded(actions: inout [DispatcherAction]) {
        guard !retiring.isEmpty else { return }
        for (id, waitFor) in retiring.sorted(by: { $0.key < $1.key }) {
            guard let record = waitFor, record <= lastRecordedID else { continue }
            retiring[id] = nil
            if sessions[id] != nil { actions.append(.close(connection: id)) }
        }
    }
}

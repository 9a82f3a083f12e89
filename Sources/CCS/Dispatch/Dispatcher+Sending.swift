import TimerHeap
/// Putting messages on the wire within the windows (ccs-protocol.md §5).
extension Dispatcher {
    /// Sends as much as the windows allow: resends first, then new and retried messages.
    mutating func pump(now: Double, actions: inout [DispatcherAction]) {
        guard maySend else { return }
        while !(resendQueue.isEmpty && readyQueue.isEmpty), case let (connection, index)? = bestConnectionIndex() {
            guard let handle = nextSendable(now: now, actions: &actions) else { return }
            table.countSend(of: handle)
            table.setPlace(.inFlight(connection), of: handle)
            let record = table.record(of: handle)!
            // In place, by the index the choice found (`nextSendable` adds or removes no session).
            let (position, freeIfCanSend) = sessions.values[index].didSend(record.messageID, handle: handle, now: now)
            table.setWire(LiveTable.Wire(connection: connection, position: position), of: handle)
            inFlightCount += 1
            noteConnectionChoice(connection, freeIfCanSend: freeIfCanSend)
            timers.schedule(at: now + configuration.ackTimeout, .ackTimeout(handle, connection: connection))
            counters.sent += 1
            actions.append(.send(connection: connection, record: record))
            actions.append(.saveProgress(record))
        }
    }

    /// The ready, non-draining connection with the most free window; ties go to the lowest id
    /// (`ConnectionChoice`: O(log n) per change, not a scan per message).
    mutating func bestConnection() -> Int? { bestConnectionIndex()?.id }

    /// `bestConnection()` with the session's index in `sessions`, for a change in place without a second lookup.
    mutating func bestConnectionIndex() -> (id: Int, index: Dictionary<Int, CCSSession>.Index)? {
        if connectionChoice.heap.count > 4 * sessions.count + 64 {
            connectionChoice.rebuild(sessions.values.filter(\.canSend).map { .init(free: $0.window.free, id: $0.id) })
        }
        var found: Dictionary<Int, CCSSession>.Index?
        let best = connectionChoice.best { entry in
            guard let index = sessions.index(forKey: entry.id), sessions.values[index].freeIfCanSend == entry.free else { return false }
            found = index
            return true
        }
        assert(best == scanForBestConnection(), "ConnectionChoice missed a change: \(String(describing: best)) is not the best connection")
        guard let best, let found else { return nil }
        return (best, found)
    }

    /// Connection `id`'s free window may have grown, or it became ready: `bestConnection` must know.
    mutating func noteConnectionChoice(_ id: Int) {
        guard let session = sessions[id] else { return }
        noteConnectionChoice(id, freeIfCanSend: session.freeIfCanSend)
    }

    /// `noteConnectionChoice(_:)` where the caller just changed the session in place and has its
    /// `CCSSession.freeIfCanSend` (no lookup, no copy of the session).
    mutating func noteConnectionChoice(_ id: Int, freeIfCanSend: Int?) {
        guard let free = freeIfCanSend else {
            connectionChoice.noteCannotSend(id)
            return
        }
        connectionChoice.note(id, free: free)
    }

    /// `bestConnection` by a scan of every session: the rule itself, which debug builds check the heap against.
    func scanForBestConnection() -> Int? {
        var best: (id: Int, free: Int)?
        for (id, session) in sessions where session.canSend {
            let free = session.window.free
            if best == nil || free > best!.free || (free == best!.free && id < best!.id) { best = (id, free) }
        }
        return best?.id
    }

    /// Pops the next message that may go now; expires and parks the ones that may not.
    mutating func nextSendable(now: Double, actions: inout [DispatcherAction]) -> LiveTable.Handle? {
        while let handle = resendQueue.popFirst() ?? readyQueue.popFirst() {
            guard table.place(of: handle) == .queued else { continue }
            let record = table.record(of: handle)!
            if record.isExpired(now: now) {
                expire(handle, actions: &actions)
                continue
            }
            if rateLimit.parkIfBlocked(table.rateKey(of: handle), handle: handle, now: now) {
                table.setPlace(.rateLimited, of: handle)
                continue
            }
            return handle
        }
        return nil
    }
}

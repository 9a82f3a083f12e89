import TimerHeap
/// Connection slots, draining and reconnects (ccs-protocol.md §5, `ReconnectPolicy`).
extension Dispatcher {
    /// Connection `id` ended. What was in flight on it is resent elsewhere with the same message_id (a lost
    /// connection is never an attempt), and its slot reconnects per `ReconnectPolicy`: at once after a healthy
    /// connection, after the reconnect backoff after a failed, short-lived or replaced one (or one that
    /// ended within `healthyConnectionSeconds` of another connection's login), after the long refusal
    /// backoff for `.refused`. ACKs still waiting for their record are not sent on it any more.
    public mutating func connectionEnded(_ id: Int, _ end: ConnectionEnd, now: Double) -> [DispatcherAction] {
        guard let session = sessions.removeValue(forKey: id) else { return [] }
        inFlightCount -= session.window.inFlight
        var actions: [DispatcherAction] = []
        // The reason may quote the server's text: a token in it is shortened (logs, the connection event).
        let reason: String? = switch end {
        case .lost(let reason), .authenticationFailed(let reason), .refused(_, let reason), .replaced(let reason): shorteningTokens(in: reason)
        case .closedLocally: nil
        }
        record(.connection(id: id, endpoint: session.endpoint, state: .closed, reason: reason), actions: &actions)
        // In message_id order, as the resends have always gone out.
        var ended: [(messageID: String, handle: LiveTable.Handle)] = []
        for item in session.items {
            if table.isLive(item.handle) {
                table.setWire(nil, of: item.handle)
                ended.append((item.messageID, item.handle))
            } else {
                orphansInFlight -= 1
            }
        }
        for (_, handle) in ended.sorted(by: { $0.messageID < $1.messageID }) where table.place(of: handle) == .inFlight(id) {
            requeueForResend(handle, now: now, actions: &actions)
        }
        if case .authenticationFailed(let reason) = end {
            stop(reason: shorteningTokens(in: reason), actions: &actions)
            return actions
        }
        if let slotIndex = slotOfConnection.removeValue(forKey: id), !isClosing {
            slots[slotIndex].connection = nil
            let ending: ReconnectPolicy.Ending
            if case .refused = end {
                ending = .refused
            } else if case .replaced = end {
                ending = .replaced
            } else if let readyAt = session.readyAt {
                ending = .droppedAfter(seconds: ReconnectPolicy.age(loggedInAt: readyAt, latestLoginInPool: latestLoginAt, now: now))
            } else {
                ending = .neverLoggedIn
            }
            let delay = reconnect(slot: slotIndex, after: ending, now: now, actions: &actions)
            if case .refused(let condition, let reason) = end {
                actions.append(.log(DispatcherLog(.error, "the server refused the stream with a condition reconnecting cannot fix; backing off", [
                    ("connection", "\(id)"), ("condition", condition), ("error", reason),
                    ("next_attempt_seconds", "\(Int(delay.rounded(.up)))"), ("check", ConnectionEnd.refusalHint(condition))])))
            }
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Resolves `messageID` in flight on connection `id`; false (counted and logged) when it is not.
    /// `handle` is the live message's (`table.handle(messageID)`), if any: it finds the message's place in
    /// the session without a lookup; only an orphan (`orphansInFlight`) needs the scan by message_id.
    mutating func resolve(_ messageID: String, _ handle: LiveTable.Handle?, on id: Int, now: Double,
                          actions: inout [DispatcherAction]) -> Bool {
        // Mutated in place: copying the session out would copy its in-flight arrays on every ack. Through its
        // index: the optional subscript's modify moves the whole session in and out of a heap buffer.
        guard let index = sessions.index(forKey: id) else {
            unmatched(messageID: messageID, on: id, actions: &actions)
            return false
        }
        var position: Int32?
        if let handle, let wire = table.wire(of: handle), wire.connection == id {
            position = wire.position
        } else if orphansInFlight > 0 {
            position = sessions.values[index].position(of: messageID)
        }
        assert(position == sessions.values[index].position(of: messageID), "the wire positions disagree with the scan for \(messageID)")
        guard let position else {
            unmatched(messageID: messageID, on: id, actions: &actions)
            return false
        }
        let (resolved, moved, freeIfCanSend) = sessions.values[index].resolve(at: position, now: now)  // in place
        if table.isLive(resolved) { table.setWire(nil, of: resolved) } else { orphansInFlight -= 1 }
        if let moved, table.isLive(moved) {
            table.setWire(LiveTable.Wire(connection: id, position: position), of: moved)
        }
        inFlightCount -= 1
        noteConnectionChoice(id, freeIfCanSend: freeIfCanSend)
        closeIfRetiredAndIdle(id, actions: &actions)
        return true
    }

    mutating func drain(_ id: Int, now: Double, actions: inout [DispatcherAction]) {
        guard var session = sessions[id], session.startDraining() else { return }
        sessions[id] = session
        timers.schedule(at: now + configuration.drainTimeout, .drainDeadline(connection: id))
        counters.drains += 1
        record(.connection(id: id, endpoint: session.endpoint, state: .draining, reason: nil), actions: &actions)
        // The draining connection leaves its slot; a replacement opens on the other endpoint (§5): at once
        // after a healthy connection or after the first young drain in a row, else after the backoff (a
        // server that drains every login is failing).
        guard let slotIndex = slotOfConnection.removeValue(forKey: id), !isClosing else { return }
        slots[slotIndex].connection = nil
        let drained = configuration.endpoints.firstIndex(of: session.endpoint) ?? slots[slotIndex].endpointIndex
        slots[slotIndex].endpointIndex = drained
        let age = ReconnectPolicy.age(loggedInAt: session.readyAt ?? now, latestLoginInPool: latestLoginAt, now: now)
        reconnect(slot: slotIndex, after: .drainedAfter(seconds: age), now: now, actions: &actions)
    }

    /// Opens the slot's next connection at once or after the backoff, per `ReconnectPolicy`; returns the delay.
    @discardableResult
    mutating func reconnect(
        slot index: Int, after ending: ReconnectPolicy.Ending, now: Double, actions: inout [DispatcherAction]
    ) -> Double {
        let decision = configuration.reconnectPolicy.next(after: ending, state: &slots[index].reconnect, using: &random)
        if decision.switchEndpoint {
            slots[index].endpointIndex = (slots[index].endpointIndex + 1) % configuration.endpoints.count
        }
        if ending == .refused {
            counters.refusedConnections += 1
        } else if decision.delay > 0 {
            counters.failedConnections += 1
        }
        if decision.delay <= 0 {
            counters.reconnects += 1
            open(slot: index, actions: &actions)
        } else {
            timers.schedule(at: now + decision.delay, .reconnect(slot: index))
        }
        return max(0, decision.delay)
    }

    /// Opens a connection for a slot; every open but the first ones is reported as `reconnecting`.
    mutating func open(slot index: Int, initial: Bool = false, actions: inout [DispatcherAction]) {
        let id = nextConnectionID
        nextConnectionID += 1
        let endpoint = configuration.endpoints[slots[index].endpointIndex]
        slots[index].connection = id
        slotOfConnection[id] = index
        sessions[id] = CCSSession(id: id, endpoint: endpoint, windowCapacity: configuration.window)
        if !initial {
            record(.connection(id: id, endpoint: endpoint, state: .reconnecting, reason: nil), actions: &actions)
        }
        actions.append(.open(connection: id, endpoint: endpoint))
    }

    /// Unresponsive: nothing resolved on the connection for `ackTimeout` while this message waited that
    /// long, or this one message waited four times as long. A connection still resolving others (say,
    /// after ccsd itself was slow to read) gets more time.
    mutating func ackTimeout(_ handle: LiveTable.Handle, on connection: Int, now: Double, actions: inout [DispatcherAction]) {
        guard let session = sessions[connection], let position = position(of: handle, in: session) else { return }
        let (messageID, sentAt) = (session.inFlight(at: position).messageID, session.inFlight(at: position).sentAt)
        let silentFor = now - session.lastResolutionAt
        if silentFor < configuration.ackTimeout, now - sentAt < 4 * configuration.ackTimeout {
            let next = min(session.lastResolutionAt + configuration.ackTimeout, sentAt + 4 * configuration.ackTimeout)
            timers.schedule(at: next, .ackTimeout(handle, connection: connection))
            return
        }
        let reason = "no ack or nack for \(messageID) after \(Int(now - sentAt)) s"
        counters.ackTimeouts += 1
        actions.append(.abort(connection: connection, reason: reason))
        actions += connectionEnded(connection, .lost(reason: reason), now: now)
    }
}

/// Where a message in flight sits in its session, found by its handle.
extension Dispatcher {
    /// The position of the message `handle` names among those in flight on `session`, or nil: by the live
    /// table's wire position, or, for a message no longer in the table, by a scan while orphans exist.
    func position(of handle: LiveTable.Handle, in session: CCSSession) -> Int32? {
        let position: Int32?
        if table.isLive(handle) {
            position = table.wire(of: handle).flatMap { $0.connection == session.id ? $0.position : nil }
        } else {
            position = orphansInFlight > 0 ? session.position(of: handle) : nil
        }
        assert(position == session.position(of: handle), "the wire positions disagree with the scan")
        return position
    }

    /// True while the message `handle` names is in flight on connection `id` (an ack timer's test).
    static func isInFlight(_ handle: LiveTable.Handle, on id: Int, table: LiveTable, sessions: [Int: CCSSession],
                           orphansInFlight: Int) -> Bool {
        if table.isLive(handle) { return table.wire(of: handle)?.connection == id }
        guard orphansInFlight > 0, let session = sessions[id] else { return false }
        return session.position(of: handle) != nil
    }
}

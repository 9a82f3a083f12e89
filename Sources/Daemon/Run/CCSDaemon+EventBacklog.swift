import Store

/// The event backlog bound (docs/limits.md, `max_event_backlog`): while the events journaled and not yet
/// acknowledged by the slowest consumer registered in this run reach the limit, new downstream messages wait
/// (intake stops reading, `POST /v1/messages` answers 503) until the backlog falls to half. Nothing is lost:
/// what is accepted goes on, and upstream messages and receipts are still handed over and ACKed (their events
/// may take the backlog past the limit).
///
/// Consumers count once registered in this run (`registerEventConsumer`, or any acknowledgement through the
/// daemon), from their stored cursor: a consumer that acknowledged in an earlier run but is not served now
/// holds nothing. The API's feed counts only once someone has acknowledged it (in this run or an earlier
/// one, `registerEventConsumerIfItHasAcknowledged`): a service that takes its events by webhook alone, or
/// from nowhere, is not held back by a feed nobody reads (`events_retention_seconds` bounds that one). The events file's own cursor is not counted: the daemon acknowledges it at each commit.
final class EventBacklogState {
    /// Registered consumers and the last seq each acknowledged.
    var cursors: [String: Int64] = [:]
    /// Consumers whose stored cursor is being read, with the highest seq acknowledged meanwhile.
    var lookingUp: [String: Int64] = [:]
    /// Consumers unregistered while their stored cursor was being read: the read's answer is dropped.
    var unregistered: Set<String> = []
    var gate = EventBacklogGate()
}

extension CCSDaemon {
    /// Counts `consumer` in the backlog from now on, from its stored cursor (0 if it has none). Idempotent.
    /// Call on the loop.
    public func registerEventConsumer(_ consumer: String) {
        eventConsumerAcknowledged(consumer, through: 0)
    }

    /// Counts `consumer` in the backlog from now on if it has ever acknowledged an event (its stored cursor is
    /// above 0); otherwise it starts counting at its first acknowledgement. Idempotent. Call on the loop.
    public func registerEventConsumerIfItHasAcknowledged(_ consumer: String) {
        eventConsumerAcknowledged(consumer, through: 0, onlyIfAcknowledged: true)
    }

    /// Stops counting `consumer` (a webhook turned off by a reload); intake resumes if the rest allow it.
    /// Its cursor stays in the store. Call on the loop.
    public func unregisterEventConsumer(_ consumer: String) {
        let state = eventBacklogState
        state.cursors[consumer] = nil
        if state.lookingUp[consumer] != nil { state.unregistered.insert(consumer) }
        checkEventBacklog()
    }

    /// Events journaled and not yet acknowledged by the slowest registered consumer, and that consumer (nil
    /// when none is registered). Call on the loop.
    public var eventBacklog: (count: Int64, slowest: String?) {
        EventBacklogGate.backlog(lastSeq: api.lastJournaledSeq, cursors: eventBacklogState.cursors)
    }

    /// New downstream messages wait (the backlog reached `max_event_backlog` and has not yet fallen to half).
    public var eventBacklogHoldsIntake: Bool { eventBacklogState.gate.isClosed }

    /// `consumer` has every event through `seq` (or registers, with 0): updates its cursor and applies the
    /// bound. A consumer new in this run is registered only when `registering` (first reading its stored
    /// cursor); otherwise (the webhook's late acknowledgements after it was turned off) it is not counted.
    /// With `onlyIfAcknowledged`, a consumer whose stored cursor is 0 and that acknowledged nothing meanwhile
    /// is left unregistered.
    func eventConsumerAcknowledged(_ consumer: String, through seq: Int64, registering: Bool = true,
                                   onlyIfAcknowledged: Bool = false) {
        let state = eventBacklogState
        if let cursor = state.cursors[consumer] {
            state.cursors[consumer] = max(cursor, seq)
            checkEventBacklog()
            return
        }
        if let seen = state.lookingUp[consumer] {
            state.lookingUp[consumer] = max(seen, seq)
            if registering { state.unregistered.remove(consumer) }
            return
        }
        guard registering else { return }
        state.lookingUp[consumer] = seq
        writer.read({ store throws(StoreError) in try store.cursor(of: consumer) }) { [weak self] result in
            guard let self else { return }
            let state = self.eventBacklogState
            let seen = state.lookingUp.removeValue(forKey: consumer) ?? seq
            if state.unregistered.remove(consumer) != nil { return }
            // A cursor that cannot be read counts from what was acknowledged in this run.
            let stored = (try? result.get()) ?? nil
            let cursor = max(stored ?? 0, seen)
            if onlyIfAcknowledged, cursor == 0 { return }
            state.cursors[consumer] = cursor
            self.checkEventBacklog()
        }
    }

    /// Applies `max_event_backlog` to the backlog now: closes or opens downstream intake, logging once per
    /// crossing. Call on the loop after anything that moves the journal's last seq, a cursor or the limit.
    func checkEventBacklog() {
        let backlog = eventBacklog
        let limit = configuration.maxEventBacklog
        switch eventBacklogState.gate.update(backlog: backlog.count, limit: limit) {
        case .closed:
            logger.warning("too many events not acknowledged by a consumer; new downstream messages wait until they fall to half",
                           ["event_backlog": "\(backlog.count)", "max_event_backlog": "\(limit)",
                            "consumer": backlog.slowest ?? ""])
        case .opened:
            logger.info("event backlog fell to half its limit; intake takes messages again",
                        ["event_backlog": "\(backlog.count)", "max_event_backlog": "\(limit)"])
            resumeIntakeIfRoom()
        case nil:
            break
        }
    }
}

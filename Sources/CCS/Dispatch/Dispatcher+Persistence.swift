import TimerHeap
/// The two-phase hand-over with the store (issue 8): the dispatcher asks with `.persist` and `.record`
/// and is told with `persisted` and `recorded(through:)`; it never calls a store itself.
extension Dispatcher {
    /// The rejection of a message_id that is already live.
    public static let duplicateError = "message_id: must be unique among outstanding messages (got a duplicate)"
    /// The rejection of a message_id that is already final (its stored outcome rides along).
    public static let duplicateFinalError = "message_id: already final (got a duplicate); its stored final event is in outcome"

    // MARK: Intake

    /// Takes validated messages (in input order; `line` is echoed in a rejection). Each new one goes into
    /// the live set as persisting (its message_id taken from now on) and out as `.persist`; it is reported
    /// accepted, and queued, only by `persisted`. Refused at once with a `.record` of `rejected`: a
    /// message_id already live (persisting, outstanding or finalizing), and every message while intake is
    /// closed (retryable), the store is unavailable (retryable), or the pool stopped.
    public mutating func submit(_ submissions: [(record: MessageRecord, line: Int?)], now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        actions.reserveCapacity(submissions.count)  // one action each: no growth (each copied every action)
        for (record, line) in submissions {
            if let (error, retryable) = intakeRefusal {
                reject(record.messageID, field: "", error: error, line: line, retryable: retryable, actions: &actions)
                continue
            }
            // A message stays live until its final event is recorded, so its id cannot be reused and a late
            // ack can never resolve a new message (abandoning at shutdown closes intake first).
            guard let handle = table.insert(record, place: .persisting(line: line)) else {
                reject(record.messageID, field: "message_id", error: Self.duplicateError, line: line, actions: &actions)
                continue
            }
            persisting += 1
            persistingOrder.append(handle)
            actions.append(.persist(record, line: line))
        }
        return actions
    }

    /// Why intake refuses every message now, and whether the submitter may try again later; nil when it takes them.
    var intakeRefusal: (error: String, retryable: Bool)? {
        switch state {
        case .stopped(let reason): return ("ccsd stopped: \(reason)", false)
        case .intakeClosed, .shuttingDown: return ("ccsd is shutting down; the message was not accepted", true)
        case .running: break
        }
        if let storeUnavailableReason {
            return ("ccsd cannot store messages right now (\(storeUnavailableReason)); the message was not accepted", true)
        }
        return nil
    }

    /// The store answered `.persist` requests (any subset, any order). `stored`: accepted (the store
    /// journaled `accepted`), queued and sent as the windows allow. `duplicateLive`, `duplicateFinal`
    /// (with its stored outcome) and `failed` (retryable): rejected, and the message_id is free again.
    /// Results for message_ids not persisting are ignored.
    public mutating func persisted(_ results: [PersistResult], now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        // Room for a send and its progress per stored message (what the pump adds when the windows are open),
        // so the array does not grow, copying its actions, several times per commit.
        actions.reserveCapacity(2 * results.count)
        for result in results {
            let messageID = result.messageID
            guard let handle = persistingHandle(messageID), case .persisting(let line)? = table.place(of: handle) else { continue }
            persisting -= 1
            switch result.outcome {
            case .stored:
                counters.accepted += 1
                enqueueAccepted(handle)
                if case .stopped(let reason) = state, !configuration.keepsMessagesOnStop {
                    abandonForStop(messageID, reason: reason, actions: &actions)
                }
            case .duplicateLive:
                table.remove(handle)
                reject(messageID, field: "message_id", error: Self.duplicateError, line: line, actions: &actions)
            case .duplicateFinal(let outcome):
                table.remove(handle)
                reject(messageID, field: "message_id", error: Self.duplicateFinalError, line: line, outcome: outcome, actions: &actions)
            case .failed(let reason):
                table.remove(handle)
                reject(messageID, field: "", error: "ccsd could not store the message (\(reason)); the message was not accepted",
                       line: line, retryable: true, actions: &actions)
            }
        }
        compactTimersIfNeeded()
        pump(now: now, actions: &actions)
        return actions
    }

    /// The handle of live message `messageID`: the oldest persisting one when it is that message (the
    /// store's usual order, no hash), else by its message_id (`LiveTable.handle`, the rule). Stale handles
    /// at the front (messages answered out of order, or gone) are dropped on the way.
    mutating func persistingHandle(_ messageID: String) -> LiveTable.Handle? {
        while let front = persistingOrder.first {
            guard case .persisting? = table.place(of: front) else {
                _ = persistingOrder.popFirst()
                continue
            }
            guard table.holds(front, messageID: messageID) else { break }
            _ = persistingOrder.popFirst()
            assert(table.handle(messageID) == front, "the persisting order disagrees with the message_id index")
            return front
        }
        // Answered out of order: by message_id. Its handle stays in the order until it reaches the front;
        // should answers keep skipping the front, the order is cut down to the persisting messages.
        if persistingOrder.count > 4 * persisting + 64 {
            var kept = FIFO<LiveTable.Handle>()
            while let handle = persistingOrder.popFirst() {
                if case .persisting? = table.place(of: handle) { kept.append(handle) }
            }
            persistingOrder = kept
        }
        return table.handle(messageID)
    }

    /// The store cannot take messages (full disk, a locked database): intake rejects every message with a
    /// retryable error until `storeAvailable()`. Nothing live is dropped.
    public mutating func storeUnavailable(reason: String) {
        storeUnavailableReason = reason
    }

    /// The store takes messages again.
    public mutating func storeAvailable() {
        storeUnavailableReason = nil
    }

    // MARK: Records

    /// The store committed every record request up to `id` (commits complete in order). Releases what
    /// waited: the ACK of each upstream message or receipt handed over, on the connection it came on if
    /// that is still open (else none: CCS redelivers, and the redelivery is ACKed as a duplicate); and each
    /// final message leaves the live set. Ids at or below an earlier call, or above the last one handed
    /// out, change nothing.
    public mutating func recorded(through id: UInt64, now: Double) -> [DispatcherAction] {
        let through = min(id, lastRecordID)
        guard through > lastRecordedID else { return [] }
        lastRecordedID = through
        var actions: [DispatcherAction] = []
        while let next = pendingReleases.first, next.id <= through {
            _ = pendingReleases.popFirst()
            switch next.release {
            case .handOver(let messageID, let connection, let to):
                if let pending = handOverPending[messageID.key], pending <= through { handOverPending[messageID.key] = nil }
                releaseAck(messageID: messageID, connection: connection, to: to, actions: &actions)
            case .ack(let messageID, let connection, let to):
                releaseAck(messageID: messageID, connection: connection, to: to, actions: &actions)
            case .finalize(let handle):
                if table.place(of: handle) == .finalizing {
                    // Still on the wire (abandoned in flight): it holds its window slot as an orphan.
                    if table.remove(handle) != nil { orphansInFlight += 1 }
                    finalizing -= 1
                }
            }
        }
        closeRetiredOnceRecorded(actions: &actions)
        return actions
    }

    private mutating func releaseAck(messageID: UpstreamMessageID, connection: Int, to: String, actions: inout [DispatcherAction]) {
        paidAck(on: connection)
        if sessions[connection] != nil {
            actions.append(.ack(connection: connection, to: to, messageID: messageID))
        } else {
            counters.acksDropped += 1
            actions.append(.log(DispatcherLog(.debug, "ACK not sent: the connection ended before the hand-over was recorded; CCS redelivers", [
                ("connection", "\(connection)"), ("message_id", messageID.text)])))
        }
    }

    /// Asks for `event` to be journaled; returns its record id. `event` is taken, not copied, into the request.
    @discardableResult
    mutating func record(_ event: consuming DispatcherEvent, finalMessageID: String? = nil, finalMessageIDHash: UInt32? = nil,
                         handedOverMessageID: String? = nil, actions: inout [DispatcherAction]) -> UInt64 {
        if case .nacked(_, let error, _, let final, _, _) = event { counters.countNack(code: error, final: final) }
        lastRecordID += 1
        actions.append(.record(RecordRequest(id: lastRecordID, event: event, finalMessageID: finalMessageID,
                                             finalMessageIDHash: finalMessageIDHash, handedOverMessageID: handedOverMessageID)))
        return lastRecordID
    }

    mutating func reject(_ messageID: String?, field: String, error: String, line: Int?, retryable: Bool = false,
                         outcome: String? = nil, actions: inout [DispatcherAction]) {
        counters.rejected += 1
        if retryable { counters.rejectedRetryable += 1 }
        record(.rejected(messageID: messageID, field: field, error: error, line: line, retryable: retryable, outcome: outcome),
               actions: &actions)
    }

    /// An upstream message or receipt: handed over once (a redelivery within the dedupe window is not), then
    /// ACKed on the connection it came on, either way, once the hand-over is recorded (ccs-protocol.md §3).
    /// A redelivery of one whose hand-over is still unrecorded waits for that record too. Returns true when
    /// it was new. Dedupe, and the store's memory of handed-over ids, go by `messageID.key`, which keeps ids
    /// that differ only in unpaired surrogates apart; the ACK carries the message_id as the server wrote it.
    mutating func handOver(
        _ messageID: UpstreamMessageID, from: String, _ event: DispatcherEvent, on id: Int, now: Double,
        actions: inout [DispatcherAction]
    ) -> Bool {
        let key = messageID.key
        if dedupe.firstSighting(of: key, now: now) {
            let recordID = record(event, handedOverMessageID: key, actions: &actions)
            handOverPending[key] = recordID
            pendingReleases.append((recordID, .handOver(messageID: messageID, connection: id, to: from)))
            oweAck(on: id)
            return true
        }
        counters.upstreamDuplicates += 1
        if handOverPending[key] != nil {
            // Behind the latest record (at or after the first sighting's), so ids stay in order.
            pendingReleases.append((lastRecordID, .ack(messageID: messageID, connection: id, to: from)))
            oweAck(on: id)
        } else {
            actions.append(.ack(connection: id, to: from, messageID: messageID))
        }
        return false
    }

    /// The one place an accepted message becomes final: it leaves the queues and the rate-limit count at
    /// once and waits in `.finalizing` (never resent, its id taken) until its final event is recorded.
    /// False when it is not accepted-and-not-final (already finalizing, persisting, or unknown).
    mutating func finalize(_ messageID: String, event: consuming DispatcherEvent, actions: inout [DispatcherAction]) -> Bool {
        guard let handle = table.handle(messageID) else { return false }
        return finalize(handle, event: event, actions: &actions)
    }

    /// `finalize` of the message a handle names (false when the handle is stale).
    mutating func finalize(_ handle: LiveTable.Handle, event: consuming DispatcherEvent, actions: inout [DispatcherAction]) -> Bool {
        guard let place = table.place(of: handle), place.isActive else { return false }
        let record = table.record(of: handle)!
        table.setPlace(.finalizing, of: handle)
        finalizing += 1
        rateLimit.ended(table.rateKey(of: handle))
        let recordID = self.record(event, finalMessageID: record.messageID, finalMessageIDHash: record.messageIDHash,
                                   actions: &actions)
        pendingReleases.append((recordID, .finalize(handle)))
        return true
    }

    /// A stored message joins the outstanding ones, last in line.
    mutating func enqueueAccepted(_ handle: LiveTable.Handle) {
        table.setPlace(.queued, of: handle)
        readyQueue.append(handle)
        let record = table.record(of: handle)!
        table.setRateKey(rateLimit.added(key: record.rateKey), of: handle)
        timers.schedule(at: record.expiresAt, .expiry(handle))
    }

    // MARK: Restart

    /// Before `start`, after a restart: the store's live messages (in accept order, `attempts`, `sends`
    /// and `lastError` as stored, `acceptedAt` on this run's monotonic clock, derived by the driver from
    /// `acceptedAtUnixMillis`) and the upstream message_ids handed over within the dedupe window (`at` on
    /// the same clock, so older ones are negative; each `messageID` is the dedupe key the store was given in
    /// `RecordRequest.handedOverMessageID`). Live messages are queued in accept order; one whose
    /// time_to_live ran out while ccsd was down ends `expired` (a `.record`), never sent. Duplicate ids in
    /// `records` are skipped.
    public mutating func restore(_ records: [MessageRecord], handedOver: [(messageID: String, at: Double)], now: Double) -> [DispatcherAction] {
        precondition(slots.isEmpty, "restore() after start()")
        for entry in handedOver.sorted(by: { $0.at < $1.at }) {
            _ = dedupe.firstSighting(of: entry.messageID, now: entry.at)
        }
        var actions: [DispatcherAction] = []
        for record in records {
            guard let handle = table.insert(record, place: .queued) else { continue }
            enqueueAccepted(handle)
            if record.isExpired(now: now) { expire(handle, actions: &actions) }
        }
        compactTimersIfNeeded()
        return actions
    }
}

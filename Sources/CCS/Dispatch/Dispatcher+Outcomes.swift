import TimerHeap
/// What CCS's answers do to a message (ccs-protocol.md §3–4): nacks by class, expiry, and the stops.
extension Dispatcher {
    mutating func nackReceived(_ nack: InboundMessage.Nack, on id: Int, now: Double, actions: inout [DispatcherAction]) {
        let group = nack.group
        var nackClass = NackClass(code: nack.error)
        if let group, group.everyMemberFailed {
            nackClass = .permanent  // every member of the group failed: final, with the list (§3)
        }
        let error = nack.error.rawValue
        switch nackClass {
        case .invalidToken, .permanent:
            if finalize(nack.messageID, event: .nacked(
                messageID: nack.messageID, error: error, description: nack.errorDescription, final: true,
                invalidToken: nackClass == .invalidToken, group: group), actions: &actions) {
                counters.nacked += 1
            }
        case .aboutAck:
            preconditionFailure("BAD_ACK nack for \(nack.messageID) reached downstream resolution; received() handles it")
        case .connectionDraining:
            // Resend at once elsewhere; not an attempt (§4).
            requeueForResend(nack.messageID, now: now, actions: &actions)
            drain(id, now: now, actions: &actions)
        case .transient, .rateLimited:
            guard let handle = table.handle(nack.messageID), table.place(of: handle)?.isActive == true else { return }
            table.updateRecord(of: handle) {
                $0.attempts += 1
                $0.lastError = error
            }
            let record = table.record(of: handle)!
            actions.append(.saveProgress(record))
            if record.attempts >= configuration.maxAttempts {
                if finalize(nack.messageID, event: .nacked(
                    messageID: nack.messageID, error: error,
                    description: "\(nack.errorDescription.map { $0 + "; " } ?? "")gave up after \(record.attempts) attempts",
                    final: true, invalidToken: false, group: group), actions: &actions) {
                    counters.nacked += 1
                }
                return
            }
            if record.isExpired(now: now) {
                expire(nack.messageID, actions: &actions)
                return
            }
            counters.retried += 1
            self.record(.nacked(
                messageID: nack.messageID, error: error, description: nack.errorDescription, final: false,
                invalidToken: false, group: group), actions: &actions)
            if nackClass == .transient {
                let delay = configuration.retryBackoff.delay(attempt: record.attempts, using: &random)
                table.setPlace(.retryWait, of: handle)
                timers.schedule(at: min(now + delay, record.expiresAt), .retry(handle))
            } else {
                let key = table.rateKey(of: handle)
                let until = rateLimit.strike(key, handle: handle, now: now, backoff: configuration.rateLimitBackoff, using: &random)
                table.setPlace(.rateLimited, of: handle)
                timers.schedule(at: until, .unblock(key))
            }
        }
    }

    /// Puts a message that left the wire unresolved first in line, unless its time_to_live ran out.
    mutating func requeueForResend(_ messageID: String, now: Double, actions: inout [DispatcherAction]) {
        guard let handle = table.handle(messageID) else { return }
        requeueForResend(handle, now: now, actions: &actions)
    }

    /// `requeueForResend` of the message a handle names.
    mutating func requeueForResend(_ handle: LiveTable.Handle, now: Double, actions: inout [DispatcherAction]) {
        guard let place = table.place(of: handle), place.isActive else { return }
        if table.record(of: handle)!.isExpired(now: now) {
            expire(handle, actions: &actions)
            return
        }
        table.setPlace(.queued, of: handle)
        resendQueue.append(handle)
    }

    mutating func expire(_ messageID: String, actions: inout [DispatcherAction]) {
        guard let handle = table.handle(messageID) else { return }
        expire(handle, actions: &actions)
    }

    mutating func expire(_ handle: LiveTable.Handle, actions: inout [DispatcherAction]) {
        guard let messageID = table.record(of: handle)?.messageID else { return }
        if finalize(handle, event: .expired(messageID: messageID), actions: &actions) {
            counters.expired += 1
        }
    }

    /// An error about an ACK ccsd sent (a `BAD_ACK` nack, a stanza error on an ACK stanza): counted and
    /// logged; no downstream message is touched, and CCS may redeliver the upstream message.
    mutating func ackError(messageID: String, error: String, on id: Int, actions: inout [DispatcherAction]) {
        counters.ackErrors += 1
        actions.append(.log(DispatcherLog(.warning, "the server rejected an ACK ccsd sent; no downstream message is affected", [
            ("connection", "\(id)"), ("message_id", messageID), ("error", error), ("ack_errors", "\(counters.ackErrors)")])))
    }

    /// An ack, nack or stanza error for nothing in flight on its connection: counted and logged.
    mutating func unmatched(messageID: String, on id: Int, actions: inout [DispatcherAction]) {
        counters.unmatchedResolutions += 1
        actions.append(.log(DispatcherLog(.warning, "ack or nack for a message not in flight on this connection; ignored", [
            ("connection", "\(id)"), ("message_id", messageID)])))
    }

    /// Authentication failed: no more sends or connections; every message accepted ends with a final
    /// `AUTHENTICATION_FAILED` nack (a configuration error no restart without a fix heals).
    mutating func stop(reason: String, actions: inout [DispatcherAction]) {
        if case .stopped = state { return }
        state = .stopped(reason: reason)
        actions.append(.stop(reason: reason))
        for id in sessions.keys.sorted() { actions.append(.close(connection: id)) }
        // With a durable store the messages stay stored for the next start (`keepsMessagesOnStop`); else
        // tell the app about every message that will now never be sent (persisting ones when stored).
        guard !configuration.keepsMessagesOnStop else { return }
        for messageID in table.messageIDs.sorted() {
            abandonForStop(messageID, reason: reason, actions: &actions)
        }
    }

    mutating func abandonForStop(_ messageID: String, reason: String, actions: inout [DispatcherAction]) {
        if finalize(messageID, event: .nacked(
            messageID: messageID, error: CCSErrorCode.authenticationFailed.rawValue,
            description: "ccsd could not log in to CCS and stopped; the message was not delivered",
            final: true, invalidToken: false, group: nil), actions: &actions) {
            counters.nacked += 1
        }
    }
}

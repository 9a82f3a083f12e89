/// Putting messages on the wire within the windows (ccs-protocol.md §5).
extension Dispatcher {
    /// Sends as much as the windows allow: resends first, then new and retried messages.
    mutating func pump(now: Double, actions: inout [DispatcherAction]) {
        guard maySend else { return }
        while !(resendQueue.isEmpty && readyQueue.isEmpty), let connection = bestConnection() {
            guard let messageID = nextSendable(now: now, actions: &actions) else { return }
            guard var record = live[messageID] else { continue }
            record.sends += 1
            live[messageID] = record
            sessions[connection]!.didSend(messageID, now: now)
            places[messageID] = .inFlight(connection)
            timers.schedule(at: now + configuration.ackTimeout, .ackTimeout(messageID, connection: connection))
            counters.sent += 1
            actions.append(.send(connection: connection, record: record))
            actions.append(.saveProgress(record))
        }
    }

    /// The ready, non-draining connection with the most free window; ties go to the lowest id.
    func bestConnection() -> Int? {
        var best: (id: Int, free: Int)?
        for (id, session) in sessions where session.canSend {
            let free = session.window.free
            if best == nil || free > best!.free || (free == best!.free && id < best!.id) { best = (id, free) }
        }
        return best?.id
    }

    /// Pops the next message that may go now; expires and parks the ones that may not.
    mutating func nextSendable(now: Double, actions: inout [DispatcherAction]) -> String? {
        while let messageID = resendQueue.popFirst() ?? readyQueue.popFirst() {
            guard places[messageID] == .queued, let record = live[messageID] else { continue }
            if record.isExpired(now: now) {
                expire(messageID, actions: &actions)
                continue
            }
            if rateLimit.parkIfBlocked(key: record.rateKey, messageID: messageID, now: now) {
                places[messageID] = .rateLimited
                continue
            }
            return messageID
        }
        return nil
    }
}

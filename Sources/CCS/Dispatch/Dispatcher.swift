/// The connection pool and outcome policy as one pure state machine (ccs-protocol.md §3–5).
///
/// Events go in (`start`, `accept`, `connectionReady`, `received`, `connectionEnded`, `tick`) with the
/// current time in seconds on a monotonic clock; actions come out. The driver performs them in order.
/// Rules it keeps:
/// - each message goes to the ready, non-draining connection with the most free window, and no
///   connection ever has more than `window` unacked messages (`FlowWindow`);
/// - ACKs of upstream messages and receipts go out at once, outside the window, on the arrival connection;
/// - every accepted message ends with exactly one final event: acked, nacked `final: true`, or expired;
/// - CONNECTION_DRAINING (control or nack) stops sends on that connection, opens a replacement on the
///   other endpoint (at once after a healthy connection, else after the reconnect backoff), and resends what
///   is still in flight there when it closes;
/// - a slot reconnects at once only after a healthy connection; failed, short-lived and refused connections
///   back off (`ReconnectPolicy`), so no failure of the server can make a reconnect loop;
/// - errors about an ACK ccsd sent (a stanza error on an ACK stanza, a `BAD_ACK` nack) never resolve a
///   downstream message, even one sharing the message_id: they are counted in `counters.ackErrors`;
/// - transient nacks back off per message, RATE_EXCEEDED backs off per token or topic, and neither stalls
///   other messages.
public struct Dispatcher: Sendable {
    public let configuration: DispatcherConfiguration
    public private(set) var counters = DispatcherCounters()
    /// Where accepted messages live until final (the seam for a durable store).
    public private(set) var store: any MessageStore
    /// Sessions by connection id, draining ones included.
    public private(set) var sessions: [Int: CCSSession] = [:]
    /// Set once an authentication failure stopped the pool.
    public private(set) var stopReason: String?

    private struct Slot: Sendable {
        var connection: Int?
        var endpointIndex: Int
        var reconnect = ReconnectPolicy.SlotState()
    }

    private enum Timer: Sendable {
        case retry(String)
        case unblock(String)
        case reconnect(slot: Int)
        case expiry(String)
        case ackTimeout(String, connection: Int)
        case drainDeadline(connection: Int)
    }

    /// Where a stored message is; queue entries are checked against it, so stale entries are skipped.
    private enum Place: Sendable, Equatable {
        case queued, inFlight(Int), retryWait, keyWait
    }

    private struct KeyBlock: Sendable {
        var until: Double
        var waiting: [String] = []
    }

    private var slots: [Slot] = []
    private var slotOfConnection: [Int: Int] = [:]
    private var places: [String: Place] = [:]
    /// Resends (drain, lost connection, unblocked keys) go before new messages.
    private var resendQueue = IDQueue()
    private var readyQueue = IDQueue()
    private var timers = TimerQueue<Timer>()
    private var blockedKeys: [String: KeyBlock] = [:]
    private var keyStrikes: [String: Int] = [:]
    /// Outstanding messages per rate key (token, topic or condition).
    private var outstandingPerKey: [String: Int] = [:]
    private var dedupe: UpstreamDeduplicator
    private var random: SplitMix64
    private var nextConnectionID = 1
    /// No more reconnects: connections are being closed.
    private var shuttingDown = false
    /// No new messages: a graceful stop is finishing what is outstanding.
    private var intakeClosed = false

    public init(configuration: DispatcherConfiguration, store: some MessageStore) {
        precondition(!configuration.endpoints.isEmpty, "at least one endpoint")
        self.configuration = configuration
        self.store = store
        self.dedupe = UpstreamDeduplicator(window: configuration.upstreamDedupeWindow)
        self.random = SplitMix64(seed: configuration.seed ?? UInt64.random(in: 0...UInt64.max))
    }

    /// Messages accepted and not yet final.
    public var outstanding: Int { store.count }

    /// The earliest time `tick` has work, if any.
    public var nextWakeup: Double? { timers.nextDue }

    // MARK: Events in

    /// Opens the configured number of connections to the primary endpoint.
    public mutating func start(now: Double) -> [DispatcherAction] {
        precondition(slots.isEmpty, "start() twice")
        var actions: [DispatcherAction] = []
        for index in 0..<configuration.connections {
            slots.append(Slot(endpointIndex: 0))
            open(slot: index, initial: true, actions: &actions)
        }
        return actions
    }

    /// Takes a validated message. A message_id that is still outstanding is rejected, and so is every
    /// message once the pool stopped or began shutting down. `line` is echoed in a rejection.
    public mutating func accept(_ record: MessageRecord, now: Double, line: Int? = nil) -> [DispatcherAction] {
        if let stopReason {
            return [.event(.rejected(messageID: record.messageID, field: "", error: "ccsd stopped: \(stopReason)", line: line))]
        }
        if shuttingDown || intakeClosed {
            return [.event(.rejected(messageID: record.messageID, field: "", error: "ccsd is shutting down; the message was not accepted", line: line))]
        }
        // A message on the wire stays in the store until it is resolved, so its id cannot be reused and a late
        // ack can never resolve a new message (abandoning at shutdown closes intake first).
        guard store.insert(record) else {
            return [.event(.rejected(messageID: record.messageID, field: "message_id",
                                     error: "message_id: must be unique among outstanding messages (got a duplicate)", line: line))]
        }
        outstandingPerKey[record.rateKey, default: 0] += 1
        places[record.messageID] = .queued
        readyQueue.push(record.messageID)
        timers.schedule(at: record.expiresAt, .expiry(record.messageID))
        compactTimersIfNeeded()
        var actions: [DispatcherAction] = [.event(.accepted(messageID: record.messageID))]
        pump(now: now, actions: &actions)
        return actions
    }

    /// Connection `id` finished TLS and XMPP login.
    public mutating func connectionReady(_ id: Int, now: Double) -> [DispatcherAction] {
        guard var session = sessions[id] else { return [] }
        if shuttingDown { return [.close(connection: id)] }  // logged in just as the pool closes
        guard session.phase == .connecting else { return [] }  // drained while logging in: it takes nothing
        session.becameReady(now: now)
        sessions[id] = session
        // The slot's failures are cleared only once this connection proves healthy (`connectionEnded`).
        var actions: [DispatcherAction] = [.event(.connection(id: id, endpoint: session.endpoint, state: .connected, reason: nil))]
        pump(now: now, actions: &actions)
        return actions
    }

    /// A CCS message arrived on connection `id`, possibly before `connectionReady` (a server delivers as
    /// soon as the resource is bound): upstream messages and receipts are handed over and ACKed there all
    /// the same, CONNECTION_DRAINING drains it, and acks/nacks match nothing, since nothing was sent on it.
    public mutating func received(_ message: InboundMessage, on id: Int, now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        switch message {
        case .ack(let ack):
            guard resolve(ack.messageID, on: id, now: now) else { break }
            guard let record = removeRecord(ack.messageID) else { break }
            keyStrikes[record.rateKey] = nil
            counters.acked += 1
            actions.append(.event(.acked(
                messageID: ack.messageID, to: ack.from ?? record.to,
                canonicalRegistrationID: ack.canonicalRegistrationID,
                group: Dispatcher.group(ack.success, ack.failure, ack.failedRegistrationIDs))))
        case .nack(let nack):
            if NackClass(code: nack.error) == .aboutAck {
                // BAD_ACK: its message_id is the upstream message ccsd ACKed, not a downstream one (§4).
                counters.ackErrors += 1
                break
            }
            guard resolve(nack.messageID, on: id, now: now) else { break }
            nackReceived(nack, on: id, now: now, actions: &actions)
        case .stanzaError(let error):
            if error.isAboutAck {
                counters.ackErrors += 1
                break
            }
            // Only an id ccsd set on a downstream stanza, in flight on this very connection, resolves.
            guard let messageID = error.resolvedMessageID else {
                counters.unmatchedResolutions += 1
                break
            }
            guard resolve(messageID, on: id, now: now) else { break }  // counted by resolve
            finish(messageID, event: .nacked(
                messageID: messageID, error: error.condition, description: error.text, final: true,
                invalidToken: false, group: nil), actions: &actions)
        case .receipt(let receipt):
            if handOverThenAck(receipt.messageID, from: receipt.from, .receipt(receipt), on: id, now: now, actions: &actions) {
                counters.receipts += 1
            }
        case .upstream(let upstream):
            if handOverThenAck(upstream.messageID, from: upstream.from, .upstream(upstream), on: id, now: now, actions: &actions) {
                counters.upstream += 1
            }
        case .control(let controlType):
            if controlType == "CONNECTION_DRAINING" {
                drain(id, now: now, actions: &actions)
            } else {
                counters.unknownControlTypes += 1
            }
        case .unknown:
            counters.unknownMessageTypes += 1
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Connection `id` ended. What was in flight on it is resent elsewhere with the same message_id (a lost
    /// connection is never an attempt), and its slot reconnects per `ReconnectPolicy`: at once after a healthy
    /// connection, after the reconnect backoff after a failed or short-lived one, after the long refusal
    /// backoff for `.refused`.
    public mutating func connectionEnded(_ id: Int, _ end: ConnectionEnd, now: Double) -> [DispatcherAction] {
        guard let session = sessions.removeValue(forKey: id) else { return [] }
        var actions: [DispatcherAction] = []
        let reason: String? = switch end {
        case .lost(let reason), .authenticationFailed(let reason), .refused(_, let reason): reason
        case .closedLocally: nil
        }
        actions.append(.event(.connection(id: id, endpoint: session.endpoint, state: .closed, reason: reason)))
        for messageID in session.inFlight.sorted() where places[messageID] == .inFlight(id) {
            requeueForResend(messageID, now: now, actions: &actions)
        }
        if case .authenticationFailed(let reason) = end {
            stop(reason: reason, actions: &actions)
            return actions
        }
        if let slotIndex = slotOfConnection.removeValue(forKey: id), !shuttingDown {
            slots[slotIndex].connection = nil
            let ending: ReconnectPolicy.Ending
            if case .refused = end {
                ending = .refused
            } else if let readyAt = session.readyAt {
                ending = .droppedAfter(seconds: now - readyAt)
            } else {
                ending = .neverLoggedIn
            }
            reconnect(slot: slotIndex, after: ending, now: now, actions: &actions)
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Time passed: fires due retries, unblocks keys, reconnects, and expires messages.
    public mutating func tick(now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        while let timer = timers.popDue(now: now) {
            switch timer {
            case .retry(let messageID):
                if places[messageID] == .retryWait {
                    places[messageID] = .queued
                    readyQueue.push(messageID)
                }
            case .unblock(let key):
                if let block = blockedKeys[key], block.until <= now {
                    blockedKeys[key] = nil
                    for messageID in block.waiting where places[messageID] == .keyWait {
                        places[messageID] = .queued
                        resendQueue.push(messageID)
                    }
                }
            case .reconnect(let slot):
                if stopReason == nil, !shuttingDown, slots[slot].connection == nil {
                    open(slot: slot, actions: &actions)
                }
            case .expiry(let messageID):
                // A message on the wire waits for its ack or nack (CCS may well accept it; the ack timeout
                // bounds the wait); if it comes back unresolved, the resend path sees it expired.
                if let record = store.record(messageID), let place = places[messageID], record.isExpired(now: now) {
                    if case .inFlight = place { break }
                    expire(messageID, actions: &actions)
                }
            case .ackTimeout(let messageID, let connection):
                guard let session = sessions[connection], let sentAt = session.sentAt[messageID] else { break }
                // Unresponsive: nothing resolved on the connection for `ackTimeout` while this message waited
                // that long, or this one message waited four times as long. A connection still resolving
                // others (say, after ccsd itself was slow to read) gets more time.
                let silentFor = now - session.lastResolutionAt
                if silentFor < configuration.ackTimeout, now - sentAt < 4 * configuration.ackTimeout {
                    let next = min(session.lastResolutionAt + configuration.ackTimeout, sentAt + 4 * configuration.ackTimeout)
                    timers.schedule(at: next, .ackTimeout(messageID, connection: connection))
                    break
                }
                let reason = "no ack or nack for \(messageID) after \(Int(now - sentAt)) s"
                counters.ackTimeouts += 1
                actions.append(.abort(connection: connection, reason: reason))
                actions += connectionEnded(connection, .lost(reason: reason), now: now)
            case .drainDeadline(let connection):
                // The server should have closed a draining stream by now; close it ourselves.
                if sessions[connection]?.phase == .draining { actions.append(.close(connection: connection)) }
            }
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Refuses new messages from now on; outstanding ones carry on (a graceful stop, step 1).
    public mutating func closeIntake() {
        intakeClosed = true
    }

    /// Ends every outstanding message with a final `nacked` of error `SHUTDOWN` (a graceful stop whose
    /// grace ran out, step 2), so the app knows which to send again. A message in flight may still have
    /// reached CCS: the description says so.
    public mutating func abandonOutstanding() -> [DispatcherAction] {
        intakeClosed = true  // abandoned copies may still be on the wire: their ids must not come back
        var actions: [DispatcherAction] = []
        for messageID in places.keys.sorted() {
            let inFlight: Bool = if case .inFlight = places[messageID] { true } else { false }
            finish(messageID, event: .nacked(
                messageID: messageID, error: "SHUTDOWN",
                description: inFlight
                    ? "ccsd stopped before CCS answered; the message may or may not have been delivered"
                    : "ccsd stopped before sending the message; it was not delivered",
                final: true, invalidToken: false, group: nil), actions: &actions)
        }
        return actions
    }

    /// Closes every connection; no reconnects follow. Messages stay outstanding (step 3).
    public mutating func shutdown() -> [DispatcherAction] {
        shuttingDown = true
        for id in sessions.keys {
            _ = sessions[id]!.startDraining()  // nothing more goes out on a closing stream
        }
        return sessions.keys.sorted().map { .close(connection: $0) }
    }

    /// Timers of messages that ended early (most end long before their time_to_live) stay in the heap
    /// until due; drop them once they outnumber the live ones, so memory follows the outstanding count.
    private mutating func compactTimersIfNeeded() {
        guard timers.count > 4096, timers.count > 4 * store.count else { return }
        timers.compact { timer in
            switch timer {
            case .expiry(let messageID): places[messageID] != nil
            case .ackTimeout(let messageID, let connection): sessions[connection]?.sentAt[messageID] != nil
            case .drainDeadline(let connection): sessions[connection] != nil
            default: true
            }
        }
    }

    /// Timers held, live and stale (for tests of the memory bound).
    var timerCount: Int { timers.count }
    /// Rate keys with bookkeeping (for tests of the memory bound).
    var rateKeysTracked: Int { keyStrikes.count + blockedKeys.count + outstandingPerKey.count }

    // MARK: Outcomes

    private mutating func nackReceived(_ nack: InboundMessage.Nack, on id: Int, now: Double, actions: inout [DispatcherAction]) {
        let group = Dispatcher.group(nack.success, nack.failure, nack.failedRegistrationIDs)
        var nackClass = NackClass(code: nack.error)
        if let group, !group.failedRegistrationIDs.isEmpty, group.success == 0 {
            nackClass = .permanent  // every member of the group failed: final, with the list (§3)
        }
        switch nackClass {
        case .invalidToken, .permanent:
            finish(nack.messageID, event: .nacked(
                messageID: nack.messageID, error: nack.error, description: nack.errorDescription, final: true,
                invalidToken: nackClass == .invalidToken, group: group), actions: &actions)
        case .aboutAck:
            preconditionFailure("BAD_ACK nack for \(nack.messageID) reached downstream resolution; received() handles it")
        case .connectionDraining:
            // Resend at once elsewhere; not an attempt (§4).
            requeueForResend(nack.messageID, now: now, actions: &actions)
            drain(id, now: now, actions: &actions)
        case .transient, .rateLimited:
            guard var record = store.record(nack.messageID) else { return }
            record.attempts += 1
            record.lastError = nack.error
            store.update(record)
            if record.attempts >= configuration.maxAttempts {
                finish(nack.messageID, event: .nacked(
                    messageID: nack.messageID, error: nack.error,
                    description: "\(nack.errorDescription.map { $0 + "; " } ?? "")gave up after \(record.attempts) attempts",
                    final: true, invalidToken: false, group: group), actions: &actions)
                return
            }
            if record.isExpired(now: now) {
                expire(nack.messageID, actions: &actions)
                return
            }
            counters.retried += 1
            actions.append(.event(.nacked(
                messageID: nack.messageID, error: nack.error, description: nack.errorDescription, final: false,
                invalidToken: false, group: group)))
            if nackClass == .transient {
                let delay = configuration.retryBackoff.delay(attempt: record.attempts, using: &random)
                places[nack.messageID] = .retryWait
                timers.schedule(at: min(now + delay, record.expiresAt), .retry(nack.messageID))
            } else {
                let strikes = (keyStrikes[record.rateKey] ?? 0) + 1
                keyStrikes[record.rateKey] = strikes
                let until = now + configuration.rateLimitBackoff.delay(attempt: strikes, using: &random)
                var block = blockedKeys[record.rateKey] ?? KeyBlock(until: until)
                block.until = max(block.until, until)
                block.waiting.append(nack.messageID)
                blockedKeys[record.rateKey] = block
                places[nack.messageID] = .keyWait
                timers.schedule(at: block.until, .unblock(record.rateKey))
            }
        }
    }

    /// An upstream message or receipt: handed over once (a redelivery within the dedupe window is not), then
    /// ACKed on the connection it came on, either way (ccs-protocol.md §3). Returns true when it was new.
    private mutating func handOverThenAck(
        _ messageID: String, from: String, _ event: DispatcherEvent, on id: Int, now: Double,
        actions: inout [DispatcherAction]
    ) -> Bool {
        let isNew = dedupe.firstSighting(of: messageID, now: now)
        if isNew {
            actions.append(.event(event))
        } else {
            counters.upstreamDuplicates += 1
        }
        actions.append(.ack(connection: id, to: from, messageID: messageID))
        return isNew
    }

    /// Puts a message that left the wire unresolved first in line, unless its time_to_live ran out.
    private mutating func requeueForResend(_ messageID: String, now: Double, actions: inout [DispatcherAction]) {
        guard let record = store.record(messageID) else { return }
        if record.isExpired(now: now) {
            expire(messageID, actions: &actions)
            return
        }
        places[messageID] = .queued
        resendQueue.push(messageID)
    }

    private mutating func finish(_ messageID: String, event: DispatcherEvent, actions: inout [DispatcherAction]) {
        guard removeRecord(messageID) != nil else { return }
        counters.nacked += 1
        actions.append(.event(event))
    }

    private mutating func expire(_ messageID: String, actions: inout [DispatcherAction]) {
        guard removeRecord(messageID) != nil else { return }
        counters.expired += 1
        actions.append(.event(.expired(messageID: messageID)))
    }

    /// The one place a message leaves the store (it is final). Per-key rate-limit memory goes with the
    /// last outstanding message of its key, so it follows what is outstanding.
    private mutating func removeRecord(_ messageID: String) -> MessageRecord? {
        guard let record = store.remove(messageID) else { return nil }
        places[messageID] = nil
        let remaining = (outstandingPerKey[record.rateKey] ?? 1) - 1
        if remaining > 0 {
            outstandingPerKey[record.rateKey] = remaining
        } else {
            outstandingPerKey[record.rateKey] = nil
            keyStrikes[record.rateKey] = nil
        }
        return record
    }

    private mutating func stop(reason: String, actions: inout [DispatcherAction]) {
        guard stopReason == nil else { return }
        stopReason = reason
        shuttingDown = true
        actions.append(.stop(reason: reason))
        for id in sessions.keys.sorted() { actions.append(.close(connection: id)) }
        // Tell the app about every message that will now never be sent.
        var outstanding = places.keys.sorted()
        outstanding.removeAll { store.record($0) == nil }
        for messageID in outstanding {
            finish(messageID, event: .nacked(
                messageID: messageID, error: "AUTHENTICATION_FAILED",
                description: "ccsd could not log in to CCS and stopped; the message was not delivered",
                final: true, invalidToken: false, group: nil), actions: &actions)
        }
    }

    private static func group(_ success: Int?, _ failure: Int?, _ failed: [String]?) -> GroupOutcome? {
        guard success != nil || failure != nil || failed != nil else { return nil }
        return GroupOutcome(success: success ?? 0, failure: failure ?? failed?.count ?? 0, failedRegistrationIDs: failed ?? [])
    }

    // MARK: Connections

    /// Resolves `messageID` in flight on connection `id`; false (and counted) when it is not.
    private mutating func resolve(_ messageID: String, on id: Int, now: Double) -> Bool {
        // Mutated in place: copying the session out would copy its in-flight table on every ack.
        guard sessions[id]?.resolve(messageID, now: now) == true else {
            counters.unmatchedResolutions += 1
            return false
        }
        return true
    }

    private mutating func drain(_ id: Int, now: Double, actions: inout [DispatcherAction]) {
        guard var session = sessions[id], session.startDraining() else { return }
        sessions[id] = session
        timers.schedule(at: now + configuration.drainTimeout, .drainDeadline(connection: id))
        counters.drains += 1
        actions.append(.event(.connection(id: id, endpoint: session.endpoint, state: .draining, reason: nil)))
        // The draining connection leaves its slot; a replacement opens on the other endpoint (§5): at once
        // after a healthy connection or after the first young drain in a row, else after the backoff (a
        // server that drains every login is failing).
        guard let slotIndex = slotOfConnection.removeValue(forKey: id), !shuttingDown else { return }
        slots[slotIndex].connection = nil
        let drained = configuration.endpoints.firstIndex(of: session.endpoint) ?? slots[slotIndex].endpointIndex
        slots[slotIndex].endpointIndex = drained
        reconnect(slot: slotIndex, after: .drainedAfter(seconds: now - (session.readyAt ?? now)), now: now, actions: &actions)
    }

    /// Opens the slot's next connection at once or after the backoff, per `ReconnectPolicy`.
    private mutating func reconnect(
        slot index: Int, after ending: ReconnectPolicy.Ending, now: Double, actions: inout [DispatcherAction]
    ) {
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
    }

    /// Opens a connection for a slot; every open but the first ones is reported as `reconnecting`.
    private mutating func open(slot index: Int, initial: Bool = false, actions: inout [DispatcherAction]) {
        let id = nextConnectionID
        nextConnectionID += 1
        let endpoint = configuration.endpoints[slots[index].endpointIndex]
        slots[index].connection = id
        slotOfConnection[id] = index
        sessions[id] = CCSSession(id: id, endpoint: endpoint, windowCapacity: configuration.window)
        if !initial {
            actions.append(.event(.connection(id: id, endpoint: endpoint, state: .reconnecting, reason: nil)))
        }
        actions.append(.open(connection: id, endpoint: endpoint))
    }

    // MARK: Sending

    /// Sends as much as the windows allow: resends first, then new and retried messages.
    private mutating func pump(now: Double, actions: inout [DispatcherAction]) {
        guard stopReason == nil, !shuttingDown else { return }
        while !(resendQueue.isEmpty && readyQueue.isEmpty), let connection = bestConnection() {
            guard let messageID = nextSendable(now: now, actions: &actions) else { return }
            guard var record = store.record(messageID) else { continue }
            record.sends += 1
            store.update(record)
            sessions[connection]!.didSend(messageID, now: now)
            places[messageID] = .inFlight(connection)
            timers.schedule(at: now + configuration.ackTimeout, .ackTimeout(messageID, connection: connection))
            counters.sent += 1
            actions.append(.send(connection: connection, record: record))
        }
    }

    /// The ready, non-draining connection with the most free window; ties go to the lowest id.
    private func bestConnection() -> Int? {
        var best: (id: Int, free: Int)?
        for (id, session) in sessions where session.canSend {
            let free = session.window.free
            if best == nil || free > best!.free || (free == best!.free && id < best!.id) { best = (id, free) }
        }
        return best?.id
    }

    /// Pops the next message that may go now; expires and parks the ones that may not.
    private mutating func nextSendable(now: Double, actions: inout [DispatcherAction]) -> String? {
        while let messageID = resendQueue.pop() ?? readyQueue.pop() {
            guard places[messageID] == .queued, let record = store.record(messageID) else { continue }
            if record.isExpired(now: now) {
                expire(messageID, actions: &actions)
                continue
            }
            if var block = blockedKeys[record.rateKey], block.until > now {
                block.waiting.append(messageID)
                blockedKeys[record.rateKey] = block
                places[messageID] = .keyWait
                continue
            }
            return messageID
        }
        return nil
    }
}

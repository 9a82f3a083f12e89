import TimerHeap
/// The connection pool and outcome policy as one pure state machine (ccs-protocol.md §3–5).
///
/// Events go in with the current time in seconds on a monotonic clock; actions come out, and the driver
/// performs them in order. Entry points: `restore` (after a restart), `start`, `submit`, `persisted`,
/// `recorded`, `connectionReady`, `received`, `connectionEnded`, `tick`, and the stop steps `closeIntake`,
/// `abandonOutstanding` (no durable store only) and `shutdown`.
///
/// It never calls a store: it asks with actions and is told (`Dispatcher+Persistence.swift`):
/// - intake: `submit` → `.persist` → `persisted` → only then the message is accepted and queued;
/// - every event goes out as `.record`; `recorded(through:)` then releases what waited for it: the ACK of
///   an upstream message or receipt, and a final message leaving the live set.
///
/// Rules it keeps:
/// - each message goes to the ready, non-draining connection with the most free window, and no
///   connection ever has more than `window` unacked messages (`FlowWindow`);
/// - ACKs of upstream messages and receipts go out as soon as their hand-over is recorded, outside the
///   window, on the arrival connection (none if it ended meanwhile: CCS redelivers);
/// - every accepted message ends with exactly one final event: acked, nacked `final: true`, or expired;
/// - CONNECTION_DRAINING (control or nack) stops sends on that connection, opens a replacement on the
///   other endpoint (at once after a healthy connection, else after the reconnect backoff), and resends what
///   is still in flight there when it closes;
/// - a slot reconnects at once only after a healthy connection; failed, short-lived and refused connections
///   back off (`ReconnectPolicy`), so no failure of the server can make a reconnect loop;
/// - errors about an ACK ccsd sent (a stanza error on an ACK stanza, a `BAD_ACK` nack) never resolve a
///   downstream message, even one sharing the message_id: they are counted in `counters.ackErrors`;
/// - transient nacks back off per message, RATE_EXCEEDED backs off per token or topic (`RateLimit`), and
///   neither stalls other messages.
public struct Dispatcher: Sendable {
    /// The pool as a whole.
    public enum PoolState: Sendable, Equatable {
        /// Takes messages; connections reconnect.
        /// Can transition to: `intakeClosed` (`closeIntake`), `shuttingDown` (`shutdown`), `stopped`.
        case running
        /// A graceful stop began: new messages are refused (retryable); what is outstanding carries on.
        /// With `sendingQueued` false nothing more goes on the wire (a durable store keeps the rest).
        /// Can transition to: `shuttingDown`, `stopped`.
        case intakeClosed(sendingQueued: Bool)
        /// Connections are closing: no sends, no reconnects, intake closed; answers still resolve.
        /// Can transition to: `stopped`.
        case shuttingDown
        /// Authentication failed: a configuration error. Nothing is sent or opened again. Final.
        case stopped(reason: String)
    }

    /// The running settings (`reconfigure` replaces them on a reload).
    public internal(set) var configuration: DispatcherConfiguration
    public internal(set) var counters = DispatcherCounters()
    /// Seconds from acceptance (`MessageRecord.acceptedAt`, across restarts) to the ack, per acked message.
    public internal(set) var ackLatency = Histogram(bounds: Histogram.ackLatencyBounds)
    public internal(set) var state = PoolState.running
    /// Sessions by connection id, draining ones included.
    public internal(set) var sessions: [Int: CCSSession] = [:]
    /// The ready connections by free window, for `bestConnection()`.
    var connectionChoice = ConnectionChoice()
    /// `inFlight`: sends minus resolutions, minus what was in flight on a session when it ended.
    var inFlightCount = 0
    /// Messages in flight whose table entry is gone (abandoned, final event recorded): only a scan of their
    /// session finds them (`CCSSession.position(of:)`), so lookups by handle scan only while this is not 0.
    var orphansInFlight = 0
    /// When a connection of the pool last logged in (`ReconnectPolicy.age(loggedInAt:latestLoginInPool:now:)`).
    var latestLoginAt: Double?

    struct Slot: Sendable {
        var connection: Int?
        var endpointIndex: Int
        var reconnect = ReconnectPolicy.SlotState()
    }

    enum Timer: Sendable {
        case retry(LiveTable.Handle)
        case unblock(RateLimit.Key)
        case reconnect(slot: Int)
        case expiry(LiveTable.Handle)
        case ackTimeout(LiveTable.Handle, connection: Int)
        case drainDeadline(connection: Int)
    }

    /// Where a live message is; queue entries are checked against it, so stale entries are skipped.
    enum Place: Sendable, Equatable {
        /// Submitted, not yet stored: not accepted, never sent; its message_id is taken.
        case persisting(line: Int?)
        case queued, inFlight(Int), retryWait, rateLimited
        /// Its final event waits to be recorded: never sent again, its message_id still taken.
        case finalizing

        /// Accepted and not final.
        var isActive: Bool {
            switch self {
            case .persisting, .finalizing: false
            default: true
            }
        }
    }

    /// What a confirmed record releases (`recorded(through:)`).
    enum Release: Sendable {
        /// The hand-over of an upstream message or receipt: then its ACK.
        case handOver(messageID: UpstreamMessageID, connection: Int, to: String)
        /// A redelivery's ACK that waits for the first sighting's hand-over.
        case ack(messageID: UpstreamMessageID, connection: Int, to: String)
        /// A final message leaves the live set.
        case finalize(LiveTable.Handle)
    }

    /// The live set: every message submitted and not yet out (persisting, outstanding, finalizing), with
    /// its place; queues and timers refer to it by handle.
    var table = LiveTable()
    var slots: [Slot] = []
    var slotOfConnection: [Int: Int] = [:]
    /// Resends (drain, lost connection, unblocked keys, retries whose backoff is over) go before new messages.
    var resendQueue = FIFO<LiveTable.Handle>()
    var readyQueue = FIFO<LiveTable.Handle>()
    var timers = TimerQueue<Timer>()
    var rateLimit = RateLimit()
    var dedupe: UpstreamDeduplicator
    var random: SplitMix64
    var nextConnectionID = 1
    /// Set while the store cannot take messages: intake rejects (retryable).
    public internal(set) var storeUnavailableReason: String?
    /// The last record id handed out, and the last one the store confirmed.
    var lastRecordID: UInt64 = 0
    var lastRecordedID: UInt64 = 0
    /// Releases waiting for their record, in record id order.
    var pendingReleases = FIFO<(id: UInt64, release: Release)>()
    /// Upstream message_ids (dedupe keys, `UpstreamMessageID.key`) whose hand-over is not yet recorded, with
    /// its record id.
    var handOverPending: [String: UInt64] = [:]
    /// ACKs waiting for their record, by connection (`acksOwed(on:)`).
    var acksOwedByConnection: [Int: Int] = [:]
    /// The sum of `acksOwedByConnection`: no connection is owed more, so a driver that finds this below its
    /// bound needs no lookup by connection (a stored property: reading it copies nothing).
    public internal(set) var acksOwedInAll = 0
    /// Messages in `.persisting`.
    public internal(set) var persisting = 0
    /// Handles of messages submitted for persisting, in submit order, stale ones included: the store answers
    /// in that order, so `persisted` finds each message at the front without hashing its message_id
    /// (`persistingHandle(_:)`).
    var persistingOrder = FIFO<LiveTable.Handle>()
    /// Messages in `.finalizing`.
    var finalizing = 0
    /// Connections leaving the pool after a reload lowered `connections` (`Dispatcher+Reconfigure.swift`):
    /// nil while messages are in flight on it; then the record id whose confirmation releases the last ACKs
    /// owed on it, after which it closes.
    var retiring: [Int: UInt64?] = [:]

    public init(configuration: DispatcherConfiguration) {
        precondition(!configuration.endpoints.isEmpty, "at least one endpoint")
        self.configuration = configuration
        self.dedupe = UpstreamDeduplicator(window: configuration.upstreamDedupeWindow)
        self.random = SplitMix64(seed: configuration.seed ?? UInt64.random(in: 0...UInt64.max))
    }

    /// Messages in the live set: submitted and not yet out (persisting, outstanding, or finalizing). The
    /// daemon's intake high-water mark and "done" check read this.
    public var outstanding: Int { table.count }

    /// Accepted messages that are not final (the live set without the persisting and finalizing ones).
    public var pending: Int { table.count - persisting - finalizing }

    /// A live message's current copy (attempts and sends included), or nil.
    public func record(_ messageID: String) -> MessageRecord? { table.entry(messageID)?.record }

    /// Set once an authentication failure stopped the pool.
    public var stopReason: String? {
        if case .stopped(let reason) = state { reason } else { nil }
    }

    /// Downstream messages on the wire and not yet answered, over every connection (draining ones included):
    /// the sum of the sessions' windows, kept as a count (read after every ack; a sum over 1,000 sessions
    /// each time showed in profiles). Debug builds check it against the sum.
    public var inFlight: Int {
        assert(inFlightCount == sessions.values.reduce(0) { $0 + $1.window.inFlight }, "inFlightCount drifted from the sessions' windows")
        assert(orphansInFlight == sessions.values.reduce(0) { $0 + $1.inFlightHandles.count { !table.isLive($0) } },
               "orphansInFlight drifted from the sessions")
        return inFlightCount
    }

    /// Record requests not yet confirmed by `recorded(through:)`.
    public var unrecorded: Int { Int(lastRecordID - lastRecordedID) }

    /// True when nothing waits on the wire or on the store: no message in flight, none persisting, and no
    /// unconfirmed record that releases something (a final message, the ACK of an upstream message or
    /// receipt). After `closeIntake(sendingQueued: false)` this is when a durable stop may close the streams:
    /// what is still queued stays in the store for the restart. Records that release nothing (rejections,
    /// connection events) do not count: a producer that keeps writing during a stop makes a rejection per
    /// line, and waiting for those would hold every stop for the whole grace; the store commits them, and
    /// their lines are written, when it closes.
    public var isQuiescent: Bool { inFlight == 0 && persisting == 0 && pendingReleases.isEmpty }

    /// The earliest time `tick` has work, if any.
    public var nextWakeup: Double? { timers.nextDue }

    /// True once connections close for good (shutting down or stopped).
    var isClosing: Bool {
        switch state {
        case .running, .intakeClosed: false
        case .shuttingDown, .stopped: true
        }
    }

    /// True when new messages may go on the wire.
    var maySend: Bool {
        switch state {
        case .running, .intakeClosed(sendingQueued: true): true
        case .intakeClosed(sendingQueued: false), .shuttingDown, .stopped: false
        }
    }

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

    /// Connection `id` finished TLS and XMPP login.
    public mutating func connectionReady(_ id: Int, now: Double) -> [DispatcherAction] {
        guard var session = sessions[id] else { return [] }
        if isClosing { return [.close(connection: id)] }  // logged in just as the pool closes
        guard session.phase == .connecting else { return [] }  // drained while logging in: it takes nothing
        session.becameReady(now: now)
        sessions[id] = session
        noteConnectionChoice(id)
        latestLoginAt = max(latestLoginAt ?? now, now)
        // The slot's failures are cleared only once this connection proves healthy (`connectionEnded`).
        var actions: [DispatcherAction] = []
        record(.connection(id: id, endpoint: session.endpoint, state: .connected, reason: nil), actions: &actions)
        pump(now: now, actions: &actions)
        return actions
    }

    /// A CCS message arrived on connection `id`, possibly before `connectionReady` (a server delivers as
    /// soon as the resource is bound): upstream messages and receipts are handed over and ACKed there all
    /// the same, CONNECTION_DRAINING drains it, and acks/nacks match nothing, since nothing was sent on it.
    public mutating func received(_ message: InboundMessage, on id: Int, now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        // An ack's usual actions (its record, the next send and its progress) in one allocation, not three.
        actions.reserveCapacity(4)
        switch message {
        case .ack(let ack):
            // The ack's one lookup by message_id; everything after goes by the handle.
            let handle = table.handle(ack.messageID)
            guard resolve(ack.messageID, handle, on: id, now: now, actions: &actions), let handle,
                  let record = table.record(of: handle) else { break }
            guard finalize(handle, event: .acked(
                messageID: ack.messageID, to: ack.from ?? record.to,
                canonicalRegistrationID: ack.canonicalRegistrationID,
                group: ack.group), actions: &actions) else { break }
            rateLimit.acked(table.rateKey(of: handle))
            counters.acked += 1
            ackLatency.observe(now - record.acceptedAt)
        case .nack(let nack):
            actions.append(.log(DispatcherLog(.info, "nack", [
                ("connection", "\(id)"), ("message_id", nack.messageID), ("error", nack.error.rawValue),
                ("to", nack.from.map(shortenedToken) ?? "")])))
            if NackClass(code: nack.error) == .aboutAck {
                // BAD_ACK: its message_id is the upstream message ccsd ACKed, not a downstream one (§4).
                ackError(messageID: nack.messageID, error: nack.error.rawValue, on: id, actions: &actions)
                break
            }
            guard resolve(nack.messageID, table.handle(nack.messageID), on: id, now: now, actions: &actions) else { break }
            nackReceived(nack, on: id, now: now, actions: &actions)
        case .stanzaError(let error):
            if error.isAboutAck {
                ackError(messageID: error.messageID ?? error.id ?? "", error: error.condition, on: id, actions: &actions)
                break
            }
            // Only an id ccsd set on a downstream stanza, in flight on this very connection, resolves.
            guard let messageID = error.resolvedMessageID else {
                unmatched(messageID: error.id ?? "", on: id, actions: &actions)
                break
            }
            guard resolve(messageID, table.handle(messageID), on: id, now: now, actions: &actions) else { break }
            if finalize(messageID, event: .nacked(
                messageID: messageID, error: error.condition, description: error.text, final: true,
                invalidToken: false, group: nil), actions: &actions) {
                counters.nacked += 1
            }
        case .receipt(let receipt):
            if handOver(receipt.upstreamMessageID, from: receipt.from, .receipt(receipt), on: id, now: now, actions: &actions) {
                counters.receipts += 1
            }
        case .upstream(let upstream):
            if handOver(upstream.upstreamMessageID, from: upstream.from, .upstream(upstream), on: id, now: now, actions: &actions) {
                counters.upstream += 1
            }
        case .control(let controlType):
            switch controlType {
            case .connectionDraining:
                drain(id, now: now, actions: &actions)
            case .other(let type):
                counters.unknownControlTypes += 1
                actions.append(.log(DispatcherLog(.warning, "unknown control_type ignored", [
                    ("connection", "\(id)"), ("control_type", type)])))
            }
        case .unknown(let type, let messageID):
            counters.unknownMessageTypes += 1
            actions.append(.log(DispatcherLog(.warning, "unknown message_type ignored", [
                ("connection", "\(id)"), ("message_type", type), ("message_id", messageID ?? "")])))
        }
        pump(now: now, actions: &actions)
        return actions
    }

    /// Time passed: fires due retries, unblocks keys, reconnects, and expires messages.
    public mutating func tick(now: Double) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        while let timer = timers.popDue(now: now) {
            switch timer {
            case .retry(let handle):
                // Its backoff is over: it goes before messages accepted after it, as rate-limit releases do.
                if table.place(of: handle) == .retryWait {
                    table.setPlace(.queued, of: handle)
                    resendQueue.append(handle)
                }
            case .unblock(let key):
                for handle in rateLimit.unblock(key, now: now) ?? [] {
                    guard table.place(of: handle) == .rateLimited else { continue }
                    table.setPlace(.queued, of: handle)
                    resendQueue.append(handle)
                }
            case .reconnect(let slot):
                if !isClosing, slots[slot].connection == nil {
                    open(slot: slot, actions: &actions)
                }
            case .expiry(let handle):
                // A message on the wire waits for its ack or nack (CCS may well accept it; the ack timeout
                // bounds the wait); if it comes back unresolved, the resend path sees it expired.
                if let entry = table[handle], entry.place.isActive, entry.record.isExpired(now: now) {
                    if case .inFlight = entry.place { break }
                    expire(handle, actions: &actions)
                }
            case .ackTimeout(let handle, let connection):
                ackTimeout(handle, on: connection, now: now, actions: &actions)
            case .drainDeadline(let connection):
                // The server should have closed a draining stream by now; close it ourselves.
                if sessions[connection]?.phase == .draining { actions.append(.close(connection: connection)) }
            }
        }
        pump(now: now, actions: &actions)
        return actions
    }

    // MARK: Stopping

    /// Refuses new messages from now on (retryable rejections): a graceful stop, step 1. With
    /// `sendingQueued` (no durable store) queued messages still go out, to finish what can be finished
    /// within the grace; without it (a durable store) nothing more goes on the wire: messages in flight get
    /// their answers, the rest stays stored for the restart, and `isQuiescent` tells when to close.
    public mutating func closeIntake(sendingQueued: Bool = true) {
        switch state {
        case .running, .intakeClosed: state = .intakeClosed(sendingQueued: sendingQueued)
        case .shuttingDown, .stopped: break
        }
    }

    /// Without a durable store only: ends every outstanding message with a final `nacked` of error
    /// `SHUTDOWN` (a graceful stop whose grace ran out, step 2), so the app knows which to send again. A
    /// message in flight may still have reached CCS: the description says so. With a durable store the
    /// driver does not call this: the messages stay stored and are resent after the restart.
    public mutating func abandonOutstanding() -> [DispatcherAction] {
        // Abandoned copies may still be on the wire: their ids must not come back.
        if case .running = state { state = .intakeClosed(sendingQueued: true) }
        var actions: [DispatcherAction] = []
        for messageID in table.messageIDs.sorted() {
            let inFlight: Bool = if case .inFlight? = table.entry(messageID)?.place { true } else { false }
            if finalize(messageID, event: .nacked(
                messageID: messageID, error: CCSErrorCode.shutdown.rawValue,
                description: inFlight
                    ? "ccsd stopped before CCS answered; the message may or may not have been delivered"
                    : "ccsd stopped before sending the message; it was not delivered",
                final: true, invalidToken: false, group: nil), actions: &actions) {
                counters.nacked += 1
            }
        }
        return actions
    }

    /// Closes every connection; no reconnects follow. Messages stay outstanding (step 3); answers that
    /// still arrive resolve them.
    public mutating func shutdown() -> [DispatcherAction] {
        if case .stopped = state {} else { state = .shuttingDown }
        for id in sessions.keys {
            _ = sessions[id]!.startDraining()  // nothing more goes out on a closing stream
        }
        return sessions.keys.sorted().map { .close(connection: $0) }
    }

    // MARK: Memory bounds

    /// Timers of messages that ended early (most end long before their time_to_live) stay in the heap
    /// until due; drop them once the heap holds twice as many as can be live (each live message's expiry,
    /// and each in-flight message's ack timeout), so memory follows the outstanding count. Each compaction
    /// is paid for by at least as many timers scheduled since the one before. At four times the live
    /// count, a SQLite flood on one connection grew the heap's array to 768 KiB (48 bytes a timer).
    mutating func compactTimersIfNeeded() {
        guard timers.count > 4096, timers.count > 2 * (table.count + inFlightCount) else { return }
        let (table, sessions, orphansInFlight) = (table, sessions, orphansInFlight)  // read while `timers` changes
        timers.compact { timer in
            switch timer {
            case .expiry(let handle): table.isLive(handle)
            case .ackTimeout(let handle, let connection):
                Self.isInFlight(handle, on: connection, table: table, sessions: sessions, orphansInFlight: orphansInFlight)
            case .drainDeadline(let connection): sessions[connection] != nil
            default: true
            }
        }
    }

    /// Timers held, live and stale (for tests of the memory bound).
    var timerCount: Int { timers.count }
    /// Rate keys with bookkeeping (for tests of the memory bound).
    var rateKeysTracked: Int { rateLimit.keysTracked }
}

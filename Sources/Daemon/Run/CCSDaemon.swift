import CCS
import Dispatch
import Foundation
import TLS
import XMLStream
import XMPP

/// The running daemon: the dispatcher (pure) driven on one event loop, one `XMPPClient` per connection,
/// intake lines in, events out. Confined to `loop`; other threads reach it through
/// `loop.execute`.
public final class CCSDaemon: XMPPClientDelegate, @unchecked Sendable {
    // @unchecked Sendable: every stored property is touched only on `loop`.
    public let loop: EventLoop
    public let configuration: Configuration
    private var dispatcher: Dispatcher
    private var clients: [Int: XMPPClient] = [:]
    private let outlet: EventOutlet
    private let logger: Logger
    private var wakeTimer: TimerHandle?
    private var wakeAt: Double?
    private var inputEnded = false
    private var inputFailed = false
    private var exitWhenDone: Bool
    private var finishing = false
    private var closing = false
    private var outletBroken = false
    private var exitCode: Int32?
    private var onExit: (@Sendable (Int32) -> Void)?
    private var intakeResume: (() -> Void)?
    private let tlsConfiguration: TLSClientConfiguration
    private let clockOrigin = DispatchTime.now().uptimeNanoseconds
    /// Unreadable CCS messages (nothing to ACK them by): each logged once, redeliveries counted.
    private var unreadable = UnreadableMessageLog()

    /// Messages outstanding above which intake pauses (memory bound for a fast producer).
    public static let intakeHighWater = 20_000

    public init(configuration: Configuration, outlet: EventOutlet, logger: Logger, loop: EventLoop,
                exitWhenDone: Bool, onExit: @escaping @Sendable (Int32) -> Void) {
        self.configuration = configuration
        self.outlet = outlet
        self.logger = logger
        self.loop = loop
        self.exitWhenDone = exitWhenDone
        self.onExit = onExit
        self.dispatcher = Dispatcher(configuration: configuration.dispatcherConfiguration)
        self.tlsConfiguration = TLSClientConfiguration(
            caFile: configuration.caFile, connectTimeout: configuration.connectTimeoutSeconds,
            handshakeTimeout: configuration.handshakeTimeoutSeconds)
    }

    /// Seconds since the daemon started, monotonic.
    public func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - clockOrigin) / 1e9
    }

    /// Opens the connections. Call on the loop.
    public func start() {
        loop.preconditionInEventLoop()
        logger.info("starting", ["sender_id": configuration.senderID, "connections": "\(configuration.connections)",
                                 "endpoints": configuration.endpoints.map(\.description).joined(separator: ",")])
        perform(dispatcher.start(now: now()))
    }

    // MARK: Intake

    /// One intake result from the reader thread: a valid message, or why line `line` was refused.
    public enum IntakeItem: Sendable {
        case message(DownstreamMessage, line: Int)
        case invalid(line: Int, messageID: String?, error: ValidationError)
    }

    /// Takes a batch of intake items (in input order). `resume` is called once intake may send more.
    public func submit(_ items: [IntakeItem], resume: @escaping () -> Void) {
        loop.preconditionInEventLoop()
        let now = now()
        let unixMillis = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        // Runs of valid messages go to the dispatcher as one batch; events keep the input order.
        var batch: [(record: MessageRecord, line: Int?)] = []
        for item in items {
            switch item {
            case .message(let message, let line):
                let key = message.targetKey
                let record = MessageRecord(
                    messageID: message.messageID!, json: message.jsonString(), to: key, rateKey: key,
                    acceptedAt: now, acceptedAtUnixMillis: unixMillis, timeToLive: message.effectiveTimeToLive)
                batch.append((record, line))
            case .invalid(let line, let messageID, let error):
                if !batch.isEmpty {
                    perform(dispatcher.submit(batch, now: now))
                    batch.removeAll()
                }
                // The event has the precise error (value shortened) for the app; the log line carries no value.
                emit(.rejected(messageID: messageID, field: error.field, error: error.description, line: line),
                     loggedError: error.logDescription)
            }
        }
        if !batch.isEmpty { perform(dispatcher.submit(batch, now: now)) }
        if !outlet.flush() { outletFailed() }
        if dispatcher.outstanding < Self.intakeHighWater || dispatcher.stopReason != nil {
            resume()
        } else {
            intakeResume = resume
        }
    }

    /// The input ended; with `--exit-when-done` the daemon exits once every message is final.
    /// - Parameter error: why reading failed, if it did; the daemon then finishes what it accepted and
    ///   exits 1 instead of 0.
    public func inputFinished(error: String? = nil) {
        loop.preconditionInEventLoop()
        inputEnded = true
        if let error {
            logger.error("cannot read the input; no more messages will be taken", ["error": error])
            inputFailed = true
        } else {
            logger.info("input ended", ["outstanding": "\(dispatcher.outstanding)"])
        }
        checkDone()
    }

    /// Stops gracefully and exits with `code` (SIGTERM, or done): no new messages; outstanding ones get
    /// `shutdownGraceSeconds` to finish, then end as `SHUTDOWN`; then the streams close (bounded).
    public func finish(code: Int32) {
        loop.preconditionInEventLoop()
        guard !finishing else { return }
        finishing = true
        exitCode = code
        dispatcher.closeIntake()
        if dispatcher.outstanding == 0 {
            closeAndExit()
            return
        }
        logger.info("stopping: finishing outstanding messages", ["outstanding": "\(dispatcher.outstanding)",
                                                                 "grace_seconds": "\(configuration.shutdownGraceSeconds)"])
        _ = loop.schedule(after: configuration.shutdownGraceSeconds) { [weak self] in
            guard let self, !self.closing else { return }
            self.logger.error("shutdown grace over; messages not final end as SHUTDOWN", ["outstanding": "\(self.dispatcher.outstanding)"])
            self.perform(self.dispatcher.abandonOutstanding())
            self.closeAndExit()
        }
    }

    /// Closes the streams and exits once they are closed, or after 3 s.
    private func closeAndExit() {
        guard !closing else { return }
        closing = true
        perform(dispatcher.shutdown())
        if clients.isEmpty {
            exitNow()
        } else {
            _ = loop.schedule(after: 3) { [weak self] in self?.exitNow() }
        }
    }

    private func exitNow() {
        guard let onExit, let exitCode else { return }
        self.onExit = nil
        for client in clients.values { client.abort() }
        outlet.flush()
        logger.info("stopped", ["exit_code": "\(exitCode)", "sent": "\(dispatcher.counters.sent)",
                                "acked": "\(dispatcher.counters.acked)", "upstream": "\(dispatcher.counters.upstream)",
                                "unreadable": "\(unreadable.total)"])
        onExit(exitCode)
    }

    private func checkDone() {
        if exitWhenDone, inputEnded, !finishing, dispatcher.outstanding == 0 {
            logger.info("all messages final; closing")
            finish(code: inputFailed ? 1 : 0)
        } else if finishing, !closing, dispatcher.outstanding == 0 {
            closeAndExit()
        }
    }

    // MARK: Actions

    /// Performs the dispatcher's actions. The store is played in memory for now: a `.persist` is stored at
    /// once (its `accepted` line written), and a `.record` is its event line, confirmed to the dispatcher
    /// once the outlet is flushed, so an upstream or receipt ACK never goes out before its event (§3).
    private func perform(_ actions: [DispatcherAction]) {
        var stored: [PersistResult] = []
        var recordedThrough: UInt64?
        for action in actions {
            switch action {
            case .open(let id, let endpoint):
                open(id, endpoint)
            case .send(let id, let record):
                clients[id]?.send(raw: CCSStanza.downstream(messageID: record.messageID, json: record.json))
            case .ack(let id, let to, let messageID):
                // Released by `recorded(through:)`: its event is already flushed to the outlet.
                clients[id]?.send(raw: CCSStanza.ack(to: to, messageID: messageID))
            case .persist(let record, let line):
                emit(.accepted(messageID: record.messageID))
                stored.append(PersistResult(messageID: record.messageID, line: line, outcome: .stored))
            case .record(let request):
                emit(request.event)
                recordedThrough = request.id
            case .saveProgress:
                break  // nothing survives a restart in memory
            case .log(let log):
                logger.log(Self.level(log.level), log.message, fields: log.metadata)
            case .abort(let id, let reason):
                logger.warning("connection unresponsive; dropping it and resending its messages", ["connection": "\(id)", "reason": reason])
                clients[id]?.abort()
            case .close(let id):
                clients[id]?.close()
            case .stop(let reason):
                logger.error("authentication failed; stopping: check sender_id and the server key",
                             ["sender_id": configuration.senderID, "jid": "\(configuration.senderID)@\(configuration.jidDomain)", "error": reason])
                if exitCode == nil { exitCode = 3 }
                finishing = true
                closing = true
                _ = loop.schedule(after: 0) { [weak self] in self?.exitAfterStop() }
            }
        }
        if !stored.isEmpty { perform(dispatcher.persisted(stored, now: now())) }
        // Hand over first, then ACK (§3): the dispatcher releases ACKs only once their events are flushed.
        // If they could not be written, no ACK: CCS redelivers.
        if !outlet.flush() {
            outletFailed()
        } else if let recordedThrough {
            perform(dispatcher.recorded(through: recordedThrough, now: now()))
        }
        if let resume = intakeResume, dispatcher.outstanding < Self.intakeHighWater / 2 {
            intakeResume = nil
            resume()
        }
        scheduleWake()
        checkDone()
    }

    /// The events outlet failed: nothing more can be handed over, so stop (exit 4) without ACKing anything
    /// more; CCS redelivers what was not ACKed.
    private func outletFailed() {
        guard !outletBroken else { return }
        outletBroken = true
        logger.error("cannot write events; stopping without ACKing what was not handed over", ["error": outlet.failure ?? "unknown"])
        exitCode = 4
        finishing = true
        closeAndExit()
    }

    private func exitAfterStop() {
        if clients.isEmpty { exitNow() } else { _ = loop.schedule(after: 1) { [weak self] in self?.exitNow() } }
    }

    /// Writes `event` and logs it. Log lines never carry message content or a full token: rejections log
    /// `loggedError` (a `ValidationError.logDescription`) when given, else the event's own error, which is
    /// then ccsd's fixed text (shutting down, duplicate message_id).
    private func emit(_ event: DispatcherEvent, loggedError: String? = nil) {
        outlet.append(event.jsonLine())
        switch event {
        case .connection(let id, let endpoint, let state, let reason):
            let level: Logger.Level = state == .closed && reason != nil && !closing ? .warning : .info
            logger.log(level, "connection \(state.rawValue)", ["connection": "\(id)", "endpoint": endpoint.description, "reason": reason ?? ""])
        case .rejected(let messageID, let field, let error, let line, let retryable, _):
            logger.warning("message rejected", ["line": line.map { "\($0)" } ?? "", "message_id": messageID ?? "",
                                                "field": ValidationError.logSafeField(field), "error": loggedError ?? error,
                                                "retryable": retryable ? "true" : "false"])
        case .nacked(let messageID, let error, _, true, _, _):
            logger.info("message failed", ["message_id": messageID, "error": error])
        case .expired(let messageID):
            logger.info("message expired", ["message_id": messageID])
        case .nacked(let messageID, let error, _, false, _, _):
            logger.debug("message will be retried", ["message_id": messageID, "error": error])
        case .accepted(let messageID):
            logger.debug("message accepted", ["message_id": messageID])
        case .acked(let messageID, let to, _, _):
            if logger.isEnabled(.debug) { logger.debug("message acked", ["message_id": messageID, "to": shortenedToken(to)]) }
        case .upstream(let upstream) where upstream.decodeError != nil:
            logger.warning("upstream message not fully decoded; handed over with decode_error and ACKed",
                           ["message_id": upstream.messageID, "from": shortenedToken(upstream.from)])
        case .receipt(let receipt) where receipt.decodeError != nil:
            logger.warning("receipt not fully decoded; handed over with decode_error and ACKed", ["message_id": receipt.messageID])
        case .upstream(let upstream):
            if logger.isEnabled(.debug) { logger.debug("upstream", ["message_id": upstream.messageID, "from": shortenedToken(upstream.from)]) }
        case .receipt(let receipt):
            logger.debug("receipt", ["message_id": receipt.messageID])
        }
    }

    private static func level(_ level: DispatcherLog.Level) -> Logger.Level {
        switch level {
        case .debug: .debug
        case .info: .info
        case .warning: .warning
        case .error: .error
        }
    }

    private func scheduleWake() {
        guard let next = dispatcher.nextWakeup else { return }
        if let wakeAt, wakeAt <= next { return }
        wakeTimer?.cancel()
        wakeAt = next
        wakeTimer = loop.schedule(after: max(0, next - now())) { [weak self] in
            guard let self else { return }
            self.wakeAt = nil
            // One more loop turn first: socket reads that queued up while the loop was busy (a slow events
            // consumer) run before timeouts are judged, so ccsd's own stall never looks like a silent server.
            self.loop.execute { [self] in self.perform(self.dispatcher.tick(now: self.now())) }
        }
    }

    private func open(_ id: Int, _ endpoint: Endpoint) {
        let credentials = XMPPCredentials(username: configuration.senderID, password: configuration.serverKey.revealed,
                                          jidDomain: configuration.jidDomain)
        let clientConfiguration = XMPPClientConfiguration(
            host: endpoint.host, port: endpoint.port, credentials: credentials, tls: tlsConfiguration,
            limits: XMLStreamLimits(maxStanzaBytes: configuration.maxStanzaBytes),
            loginTimeout: configuration.loginTimeoutSeconds, keepaliveInterval: configuration.keepaliveSeconds,
            deadPeerTimeout: configuration.deadPeerSeconds)
        let client = XMPPClient(configuration: clientConfiguration, tag: id, on: loop, delegate: self)
        clients[id] = client
        client.start()
    }

    // MARK: XMPPClientDelegate

    public func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) {
        perform(dispatcher.connectionReady(client.tag, now: now()))
    }

    public func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) {
        let message: InboundMessage?
        do {
            message = try InboundMessage.parse(stanza: stanza)
        } catch {
            // Nothing to ACK it by (no message_id, or an upstream without from): CCS may redeliver it, so log
            // each one once (by message_id, or by payload digest) and count the rest.
            if unreadable.record(error) {
                logger.warning("unreadable CCS message ignored; its redeliveries are counted, not logged",
                               ["connection": "\(client.tag)", "message_id": error.messageID ?? "", "error": error.description,
                                "unreadable_total": "\(unreadable.total)"])
            }
            return
        }
        guard let message else { return }
        // The dispatcher says what to log (`.log` actions).
        perform(dispatcher.received(message, on: client.tag, now: now()))
    }

    public func xmppClient(_ client: XMPPClient, noticed error: XMPPError) {
        // A refused session or stanzas ignored before binding: the stream carries on (XMPPClientDelegate).
        logger.warning("server misbehaved; carrying on", ["connection": "\(client.tag)", "error": error.description])
    }

    public func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) {
        // Deferred one turn: the end may be reported from inside a send we are still performing.
        let id = client.tag
        loop.execute { [self] in
            clients[id] = nil
            let end: ConnectionEnd
            if error.kind == .closedLocally {
                end = .closedLocally
            } else if error.isConfigurationError {
                end = .authenticationFailed(reason: error.description)
            } else if let condition = error.unhealableCondition {
                end = .refused(condition: condition, reason: error.description)  // the dispatcher logs it
            } else {
                end = .lost(reason: error.description)
            }
            perform(dispatcher.connectionEnded(id, end, now: now()))
            if closing, clients.isEmpty, exitCode != nil { exitNow() }
        }
    }
}

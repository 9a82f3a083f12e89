import CCS
import Dispatch
import TLS
import XMLStream

/// One client connection to the emulator: TLS, a stream parser, the server negotiation, and the CCS
/// per-connection state. Confined to the emulator's loop; the `CCSEmulator` performs the CCS logic.
final class EmulatorConnection: TLSConnectionDelegate {
    /// Where the connection is; draining is a state, not a flag.
    enum Phase: Equatable {
        /// TLS handshake or XMPP negotiation in progress.
        case negotiating
        /// Bound: CCS traffic flows both ways.
        case ready
        /// CONNECTION_DRAINING sent: new downstream messages are nacked, in-flight ones are still acked,
        /// the stream closes when the grace timer fires.
        case draining
        /// The emulator ended the stream (or aborted); nothing more is sent or processed.
        case closing
        /// TLS is closed; the emulator forgot this connection.
        case closed

        var name: String {
            switch self {
            case .negotiating: "negotiating"
            case .ready: "ready"
            case .draining: "draining"
            case .closing: "closing"
            case .closed: "closed"
            }
        }
    }

    let id: Int
    let tls: TLSConnection
    private let parser: XMLStreamParser
    var negotiation: ServerNegotiation
    private(set) var phase: Phase = .negotiating
    /// Weak: a connection's TLS callbacks may still run on the loop after its emulator was stopped and
    /// released (a test ending while clients disconnect); they then find no emulator and do nothing.
    private weak var emulator: CCSEmulator?
    var jid: String?

    /// Downstream messages received here and not yet acked/nacked by the emulator.
    var unacked = 0
    /// Upstream messages sent here and not yet ACKed by the client: message_id → (order, JSON).
    var pendingUpstream: [String: (sequence: Int, json: String)] = [:]
    /// Receipts sent here and not yet ACKed: their `dr2:` message_ids.
    var pendingReceipts: Set<String> = []
    var loginTimer: TimerHandle?
    var drainTimer: TimerHandle?
    /// An armed `ConnectionFault` that fires right after the bind result.
    var loginFault: ConnectionFault?
    /// The `half-open` fault: nothing is written, everything read is ignored.
    var isHalfOpen = false
    /// The `slow-read` fault's latest pause: only its timer resumes reading.
    var slowReadGeneration = 0
    /// When the server broke this connection (a fault the client abandons it for, or the emulator ending
    /// it), uptime in ns; nil while healthy. What is read here afterwards was written before the client
    /// knew (`DownstreamArrival`).
    private(set) var brokenAt: UInt64?
    /// Acks written here in the last `ConnectionFault.ackLossWindowNanoseconds`: message_id and uptime (ns).
    var recentAcks = FIFO<(messageID: String, at: UInt64)>()
    /// Downstream messages the emulator acked on this connection (`ackedPerConnection()`).
    var ackedHere = 0
    /// A reusable buffer for stanzas written as bytes (`writePlainAck`).
    var scratch: [UInt8] = []

    init(id: Int, tls: TLSConnection, configuration: EmulatorConfiguration, emulator: CCSEmulator) {
        self.id = id
        self.tls = tls
        self.emulator = emulator
        self.parser = XMLStreamParser(limits: configuration.limits, payloadShape: .ccs)
        self.negotiation = ServerNegotiation(senderID: configuration.senderID, serverKey: configuration.serverKey,
                                             jidDomain: configuration.jidDomain, connectionTag: String(id))
        negotiation.streamHeaderPrefix = configuration.negotiationFaults.headerPrefix
        negotiation.afterSuccess = configuration.negotiationFaults.afterSuccess
        negotiation.failureEchoesCredentials = configuration.negotiationFaults.saslFailureEchoesCredentials
    }

    /// Whether downstream replies and upstream traffic may still be written.
    var isOpenForTraffic: Bool { phase == .ready || phase == .draining }

    // MARK: Output

    /// Writes `text`; a client that stopped reading (write buffer full) is dropped.
    func write(_ text: String) {
        guard phase != .closing, phase != .closed, !isHalfOpen else { return }
        do {
            try tls.write(text)
        } catch {
            if error.kind == .writeBufferFull {
                emulator?.log("client stopped reading; dropping the connection", connection: id)
                abort()
            }
        }
    }

    /// Writes `bytes` (UTF-8 text), as `write(_:)` does.
    func write(bytes: [UInt8]) {
        guard phase != .closing, phase != .closed, !isHalfOpen else { return }
        let result: Result<Void, TLSError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(TLSError) in try tls.write(buffer) }
        }
        if case .failure(let error) = result {
            if error.kind == .writeBufferFull {
                emulator?.log("client stopped reading; dropping the connection", connection: id)
                abort()
            }
        }
    }

    /// Ends the stream: optional `<stream:error>`, `</stream:stream>`, then a clean TLS close (RFC 6120 §4.4, §4.9).
    func closeStream(condition: String?, text: String? = nil) {
        guard phase != .closing, phase != .closed else { return }
        var out = ""
        if let condition { out += XMLWriter.streamError(condition: condition, text: text) }
        out += XMLWriter.streamFooter
        write(out)
        enterClosing()
        tls.close()
    }

    /// Drops the connection without close_notify.
    func abort() {
        guard phase != .closed else { return }
        enterClosing()
        tls.abort()
    }

    /// Ends the connection at the transport without a stream end: TLS close_notify and FIN (`reset` false),
    /// or a TCP reset (`reset` true). For the after-login fault.
    func closeTransport(reset: Bool) {
        guard phase != .closed else { return }
        enterClosing()
        if reset { tls.reset() } else { tls.close() }
    }

    func becomeReady() {
        if phase == .negotiating { phase = .ready }
    }

    func startDraining(grace: Double, onGraceOver: @escaping () -> Void) {
        guard phase == .ready else { return }
        phase = .draining
        write(ServerStanzas.connectionDraining)
        drainTimer = tls.eventLoop.schedule(after: grace, onGraceOver)
    }

    /// Notes that the server broke this connection now (the first break counts).
    func markBroken() {
        if brokenAt == nil { brokenAt = DispatchTime.now().uptimeNanoseconds }
    }

    private func enterClosing() {
        markBroken()
        phase = .closing
        loginTimer?.cancel()
        drainTimer?.cancel()
    }

    // MARK: TLSConnectionDelegate

    func tlsConnectionDidBecomeReady(_ connection: TLSConnection) {}

    func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
        guard phase != .closing, phase != .closed, !isHalfOpen else { return }
        do {
            try parser.feed(bytes, payload: takePayload) { event in
                guard phase != .closing, phase != .closed else { return }
                let actions: [ServerNegotiation.Action]
                switch event {
                case .streamStart(let header): actions = negotiation.streamStarted(header)
                case .stanza(let stanza): actions = negotiation.stanzaReceived(stanza)
                case .streamEnd: actions = negotiation.streamEnded()
                }
                perform(actions)
            }
        } catch {
            emulator?.xmlError(on: self, error)
            closeStream(condition: error.streamErrorCondition)
        }
    }

    /// A `<message><gcm xmlns="google:mobile:data">TEXT</gcm></message>` without `type`, handed over by the
    /// parser as TEXT (`XMLPayloadShape.ccs`): taken when it is a plain downstream message the negotiation
    /// would deliver as it is (bound, the stanza in `jabber:client`), as `perform(_:)` would have delivered
    /// the built stanza; otherwise declined, and the parser hands over the stanza it builds.
    private func takePayload(_ text: UnsafeRawBufferPointer) -> Bool {
        guard phase != .closing, phase != .closed, negotiation.isBound, let emulator,
              let message = ClientPayload.plainDownstream(payload: text, of: parser) else { return false }
        return emulator.receivedPlainDownstream(message, on: self)
    }

    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) {
        guard phase != .closed else { return }
        phase = .closed
        loginTimer?.cancel()
        drainTimer?.cancel()
        emulator?.connectionClosed(self, error: error)
    }

    private func perform(_ actions: [ServerNegotiation.Action]) {
        for action in actions {
            guard phase != .closing, phase != .closed else { return }
            switch action {
            case .send(let text): write(text)
            case .resetParser: parser.reset()
            case .authenticated: emulator?.authenticated(self)
            case .authenticationFailed(let reason): emulator?.authenticationFailed(self, reason: reason)
            case .bound(let jid):
                self.jid = jid
                emulator?.bound(self)
            case .deliver(let stanza): emulator?.received(stanza, on: self)
            case .unknownStanza(let stanza): emulator?.unknownStanza(stanza, on: self)
            case .close(let condition, let text): closeStream(condition: condition, text: text)
            }
        }
    }
}

import Dispatch
import TLS
import XMLStream

/// Settings of one XMPP client connection over direct TLS (ccs-protocol.md §1, §5).
public struct XMPPClientConfiguration: Sendable {
    /// The host to connect to and verify the certificate against (not the JID domain).
    public var host: String
    /// TCP port; CCS uses 5235 (production) and 5236 (pre-production).
    public var port: Int
    public var credentials: XMPPCredentials
    public var tls: TLSClientConfiguration
    /// Inbound stanza bounds (default 1 MiB, depth 32).
    public var limits: XMLStreamLimits
    /// Seconds from TLS ready to login finished (bind and, if offered, session answered), else
    /// `.negotiationTimedOut`. Default 20.
    public var loginTimeout: Double
    /// Seconds of inbound silence before a XEP-0199 ping. Default 30.
    public var keepaliveInterval: Double
    /// Seconds of inbound silence after which the peer is dead. Default 90.
    public var deadPeerTimeout: Double
    /// Seconds to wait for the server's `</stream:stream>` after ours before closing TLS. Default 2.
    public var closeGrace: Double

    public init(
        host: String, port: Int, credentials: XMPPCredentials, tls: TLSClientConfiguration = TLSClientConfiguration(),
        limits: XMLStreamLimits = XMLStreamLimits(), loginTimeout: Double = 20, keepaliveInterval: Double = 30,
        deadPeerTimeout: Double = 90, closeGrace: Double = 2
    ) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.tls = tls
        self.limits = limits
        self.loginTimeout = loginTimeout
        self.keepaliveInterval = keepaliveInterval
        self.deadPeerTimeout = deadPeerTimeout
        self.closeGrace = closeGrace
    }
}

/// Receives an `XMPPClient`'s events, on its event loop.
public protocol XMPPClientDelegate: AnyObject {
    /// Login finished; `jid` is the bound full JID.
    func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String)
    /// A stanza arrived (pings and unknown IQs are already answered). Stanzas are traffic from the bind
    /// request on, so this may come before `xmppClientDidBecomeReady` while the session request is pending
    /// (RFC 6120 §7, RFC 6121 Appendix E); replies to it (an upstream ACK) may be sent at once.
    func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement)
    /// A CCS payload stanza (`XMLPayloadShape.ccs`: a `<message>` without `type` whose one child is a `gcm`
    /// in `google:mobile:data` with text only) offered as the `gcm` text alone (not trimmed; valid only during
    /// the call), where the stanza would otherwise come to `xmppClient(_:didReceive:)`. Returns whether it
    /// took the payload; when false, the same stanza comes to `xmppClient(_:didReceive:)` as an element.
    /// Default: false.
    func xmppClient(_ client: XMPPClient, didReceivePayload text: UnsafeRawBufferPointer) -> Bool
    /// Something that did not end the stream but is worth a log line (a refused session, stanzas ignored
    /// before resource binding); `error` carries no stanza content. Default: nothing.
    func xmppClient(_ client: XMPPClient, noticed error: XMPPError)
    /// The connection ended; called exactly once. `error.kind == .closedLocally` after `close()`.
    func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError)
}

extension XMPPClientDelegate {
    public func xmppClient(_ client: XMPPClient, noticed error: XMPPError) {}
    public func xmppClient(_ client: XMPPClient, didReceivePayload text: UnsafeRawBufferPointer) -> Bool { false }
}

/// The driver of one XMPP client stream: it owns the TLS connection, the streaming parser, the
/// negotiation state machine and the keepalive, and performs what they decide. Confined to its loop.
///
/// The owner must keep a strong reference until `didEndWith`: the TLS connection holds its delegate weakly.
public final class XMPPClient: TLSConnectionDelegate {
    public let configuration: XMPPClientConfiguration
    public let loop: EventLoop
    public weak var delegate: XMPPClientDelegate?
    /// Free-form tag for the owner (the connection id in ccsd).
    public let tag: Int

    private var tls: TLSConnection?
    private let parser: XMLStreamParser
    // `negotiation` and `ended` are read for every stanza; they skip the runtime exclusivity check (about 75
    // instructions an access). Their accesses never overlap: the client is confined to its loop, and each
    // access (a read, or a mutating call of the negotiation that returns its actions) ends before the actions
    // are performed or a delegate is called.
    @exclusivity(unchecked) private var negotiation: StreamNegotiation
    private var keepalive: Keepalive?
    private var loginTimer: TimerHandle?
    private var keepaliveTimer: TimerHandle?
    private var closeTimer: TimerHandle?
    @exclusivity(unchecked) private var ended = false
    private var closingLocally = false

    public init(configuration: XMPPClientConfiguration, tag: Int = 0, on loop: EventLoop, delegate: XMPPClientDelegate?) {
        self.configuration = configuration
        self.loop = loop
        self.tag = tag
        self.delegate = delegate
        self.parser = XMLStreamParser(limits: configuration.limits, payloadShape: .ccs)
        self.negotiation = StreamNegotiation(credentials: configuration.credentials)
    }

    /// Connects, runs TLS and logs in. Call on the loop.
    public func start() {
        loop.preconditionInEventLoop()
        precondition(tls == nil, "start() twice")
        tls = TLSConnection.connect(host: configuration.host, port: configuration.port, configuration: configuration.tls,
                                    on: loop, delegate: self)
    }

    /// Whether login finished and the stream is open.
    public var isReady: Bool { negotiation.isReady && !ended && !closingLocally }

    /// Sends one serialized stanza. Returns false when it could not be queued (the connection is ending, or
    /// the peer stopped reading and the write buffer is full, which ends the connection).
    @discardableResult
    public func send(raw text: String) -> Bool {
        loop.preconditionInEventLoop()
        guard let tls, !ended, !closingLocally else { return false }  // nothing after our </stream:stream>
        do {
            try tls.write(text)
            return true
        } catch {
            if error.kind == .writeBufferFull {
                end(XMPPError(.transport, message: "the server stopped reading: \(error.reason)"))
            }
            return false
        }
    }

    /// Sends one serialized stanza given as UTF-8 bytes; as `send(raw:)`, without a `String` in between.
    @discardableResult
    public func send(utf8 bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(utf8Bytes: $0) }
    }

    /// Sends one serialized stanza given as UTF-8 bytes read in place (queued as a copy); as `send(raw:)`.
    @discardableResult
    public func send(utf8Bytes bytes: UnsafeRawBufferPointer) -> Bool {
        loop.preconditionInEventLoop()
        guard let tls, !ended, !closingLocally else { return false }
        do {
            try tls.write(bytes)
            return true
        } catch {
            if error.kind == .writeBufferFull {
                end(XMPPError(.transport, message: "the server stopped reading: \(error.reason)"))
            }
            return false
        }
    }

    /// Sends an element, serialized with `jabber:client` in scope.
    @discardableResult
    public func send(_ element: XMLElement) -> Bool {
        send(raw: XMLWriter.serialize(element, parentNamespace: XMLNamespace.client))
    }

    /// Closes the stream cleanly (RFC 6120 §4.4): `</stream:stream>` for the stream the server is in
    /// (`StreamNegotiation.close()`: during SASL it waits for the outcome), then the server's footer, then
    /// TLS close_notify; bounded by `closeGrace`. The delegate gets `.closedLocally`.
    public func close() {
        loop.preconditionInEventLoop()
        guard !ended, !closingLocally else { return }
        closingLocally = true
        guard let tls, tls.isReady else {
            end(XMPPError(.closedLocally, message: ""))
            return
        }
        perform(negotiation.close())
        guard !ended else { return }
        closeTimer = loop.schedule(after: configuration.closeGrace) { [weak self] in
            self?.end(XMPPError(.closedLocally, message: ""))
        }
    }

    /// Drops the connection at once, without closing the stream (tests, shutdown after a grace).
    public func abort() {
        loop.preconditionInEventLoop()
        tls?.abort()
        end(XMPPError(.closedLocally, message: "aborted"))
    }

    /// Stops (true) or resumes (false) reading from the server once logged in: inbound backpressure (TCP
    /// then holds the server's writes). Stanzas already read are still delivered. The keepalive runs on:
    /// a pause longer than the dead-peer timeout drops the connection, and the server redelivers what it
    /// was not ACKed.
    public func setReadingPaused(_ paused: Bool) {
        loop.preconditionInEventLoop()
        tls?.isReadingPaused = paused
    }

    // MARK: TLSConnectionDelegate

    public func tlsConnectionDidBecomeReady(_ connection: TLSConnection) {
        guard !ended else { return }
        loginTimer = loop.schedule(after: configuration.loginTimeout) { [weak self] in
            guard let self, !self.negotiation.isReady else { return }
            self.perform(self.negotiation.failExternally(XMPPError(
                .negotiationTimedOut, message: "no login within \(self.configuration.loginTimeout) s")))
        }
        perform(negotiation.start())
    }

    public func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
        guard !ended else { return }
        // After the reply to a ping the next ping is due `keepaliveInterval` after it: re-arm (once per ping).
        if keepalive?.received(at: XMPPClient.now()) != nil { scheduleKeepalive() }
        // The delegate is loaded once per read, not once per stanza (a weak load, and a release of an object
        // with weak references, about 130 instructions): the payloads of one read go to the delegate as of its
        // start, which is held for the read.
        let payloadDelegate = delegate
        do {
            // Events are handled as they come, so a stream restart (parser.reset() inside the handler)
            // applies to the very next byte of this read (RFC 6120 §6.4.6).
            try parser.feed(bytes, payload: { text in
                guard !ended else { return true }  // dropped, as a `.stanza` event would be
                // Offered only where the negotiation would deliver the stanza as it is (the one rule for
                // that is `deliversMessages`); anything else comes as the element, below.
                guard negotiation.deliversMessages else { return false }
                // Called through the optional, not bound to a new reference: no retain and release per stanza.
                return payloadDelegate?.xmppClient(self, didReceivePayload: text) ?? false
            }) { event in
                guard !ended else { return }
                switch event {
                case .streamStart(let header): perform(negotiation.streamStarted(header))
                case .stanza(let stanza): perform(negotiation.stanzaReceived(stanza))
                case .streamEnd: perform(negotiation.streamEnded())
                }
            }
        } catch {
            // What parsed before the fault was handled; close with the matching stream error (RFC 6120 §4.9.3).
            guard !ended else { return }
            if negotiation.streamOpen {  // the footer follows from the negotiation
                writeStreamFraming(XMLWriter.streamError(condition: error.streamErrorCondition, text: nil))
            }
            perform(negotiation.failExternally(XMPPError(.invalidXML, condition: error.streamErrorCondition, message: error.message)))
        }
    }

    public func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) {
        if let error {
            end(XMPPError(.transport, message: error.description))
        } else if closingLocally {
            end(XMPPError(.closedLocally, message: ""))
        } else {
            end(XMPPError(.transport, message: "connection closed by \(connection.remoteDescription)"))
        }
    }

    // MARK: Driving the state machine

    private func perform(_ actions: [StreamNegotiation.Action]) {
        for action in actions {
            guard !ended else { return }
            switch action {
            case .sendStreamHeader(let to):
                writeStreamFraming(XMLWriter.streamHeader(to: to))
            case .restartStream(let to):
                // RFC 6120 §6.4.6: a fresh parser for the new stream, from the next byte on; whitespace left
                // from the old stream and a byte-order mark before the new header are skipped (StreamPrologue).
                parser.reset()
                writeStreamFraming(XMLWriter.streamHeader(to: to))
            case .sendStreamFooter:
                writeStreamFraming(XMLWriter.streamFooter)
            case .send(let element):
                send(element)
            case .ready(let jid):
                loginTimer?.cancel()
                loginTimer = nil
                keepalive = Keepalive(pingInterval: configuration.keepaliveInterval,
                                      deadPeerTimeout: configuration.deadPeerTimeout, now: XMPPClient.now())
                scheduleKeepalive()
                delegate?.xmppClientDidBecomeReady(self, jid: jid)
            case .deliver(let stanza):
                delegate?.xmppClient(self, didReceive: stanza)
            case .notice(let error):
                delegate?.xmppClient(self, noticed: error)
            case .fail(let error):
                // Our footer, if a stream of ours was open, came just before (`StreamNegotiation`).
                end(closingLocally ? XMPPError(.closedLocally, message: "") : error)
            }
        }
    }

    /// Writes a stream header, footer or stream error as the negotiation decided: also while closing
    /// (the restart header and footer that complete a close during SASL), never after the end.
    private func writeStreamFraming(_ text: String) {
        guard let tls, !ended else { return }
        _ = try? tls.write(text)
    }

    /// Arms the keepalive timer at the keepalive's `deadline`, replacing the one armed before.
    private func scheduleKeepalive() {
        guard let keepalive else { return }
        keepaliveTimer?.cancel()
        let delay = max(0.05, keepalive.deadline - XMPPClient.now())
        keepaliveTimer = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            // Judge silence one loop turn later, after reads that queued up while the loop was busy.
            let bound = LoopBound(self, eventLoop: self.loop)
            self.loop.execute { bound.value.checkKeepalive() }
        }
    }

    /// Pings when the peer has been quiet, ends the stream when it has been silent too long.
    private func checkKeepalive() {
        guard !ended, var keepalive else { return }
        let decision = keepalive.check(at: XMPPClient.now())
        self.keepalive = keepalive
        switch decision {
        case .none: break
        case .sendPing: send(negotiation.makePing())
        case .deadPeer:
            perform(negotiation.failExternally(XMPPError(
                .deadPeer, message: "nothing received for \(configuration.deadPeerTimeout) s")))
            return
        }
        scheduleKeepalive()
    }

    /// Ends the connection once: timers off, TLS closed, delegate told.
    private func end(_ error: XMPPError) {
        guard !ended else { return }
        ended = true
        loginTimer?.cancel()
        keepaliveTimer?.cancel()
        closeTimer?.cancel()
        _ = negotiation.failExternally(error)
        tls?.close()
        delegate?.xmppClient(self, didEndWith: error)
    }

    /// Monotonic seconds.
    static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}

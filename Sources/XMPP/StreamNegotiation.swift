import XMLStream

/// The client side of XMPP stream negotiation as a pure state machine (RFC 6120 §4–§7).
///
/// Events go in (`start()`, `streamStarted(_:)`, `stanzaReceived(_:)`, `streamEnded()`), actions come out.
/// The driver that owns the socket performs the actions; this type does no I/O and reads no clock.
/// The flow, over direct TLS with no STARTTLS (ccs-protocol.md §1):
///
///     header → features(mechanisms) → <auth mechanism="PLAIN"> → <success/> → restart:
///     header → features(bind[, session]) → bind IQ → [session IQ] → ready
///
/// Stanzas are traffic from the moment the bind request is out, whatever negotiation step is still
/// pending (RFC 6120 §7: a server routes to a resource once bound; RFC 6121 Appendix E makes the
/// session request a no-op): messages and presence go up with `.deliver` (possibly before `.ready`),
/// XEP-0199 pings get a result, other `iq get`/`set` get `service-unavailable` (RFC 6120 §8.2.3, §8.4),
/// and IQ results and errors that are not the answer to our own request go up too; none of them fails
/// the stream. Before the bind request (features, SASL), `<message>` and `<presence>` cannot be for us
/// and are ignored, unACKed, so the server redelivers them (RFC 6120 §7.1); `iq get`/`set` are answered
/// as above and IQ results/errors ignored. Only a nonza that does not fit the step fails the stream.
///
/// A session request the server answers with an error does not fail the stream either: the session is a
/// no-op (RFC 6121 Appendix E), and failing would keep ccsd from ever logging in to such a server. The
/// refusal is reported with `.notice`, then `.ready` follows.
public struct StreamNegotiation: Sendable {
    /// What the driver must do, in order.
    public enum Action: Sendable, Equatable {
        /// Write the initial stream header to the server (RFC 6120 §4.2), `to` = the JID domain.
        case sendStreamHeader(to: String)
        /// Reset the XML parser for a new stream, then write a new header (RFC 6120 §6.4.6).
        case restartStream(to: String)
        /// Write `</stream:stream>`, closing our stream (RFC 6120 §4.4); nothing may be written after it.
        case sendStreamFooter
        /// Write this stanza or nonza.
        case send(XMLElement)
        /// Negotiation finished; the full JID the server bound.
        case ready(jid: String)
        /// A stanza for the layer above: any stanza once the bind request is out, also before `.ready`.
        case deliver(XMLElement)
        /// Something the operator may want to know that does not end the stream: a refused session, or
        /// the first stanza ignored before resource binding. Never carries stanza content.
        case notice(XMPPError)
        /// The stream failed or the server ended it: close the transport (TLS close_notify), report the
        /// error. A `.sendStreamFooter` comes first whenever a stream of ours is open.
        case fail(XMPPError)
    }

    /// The negotiation step; sub-state lives inside the cases.
    public enum State: Sendable, Equatable {
        case idle
        /// Waiting for the server's stream header; `authenticated` tells which of the two streams.
        case awaitingStreamHeader(authenticated: Bool)
        case awaitingFeatures(authenticated: Bool)
        case authenticating
        case binding(iqID: String)
        case establishingSession(iqID: String, jid: String)
        case ready(jid: String)
        case failed
    }

    public private(set) var state: State = .idle
    /// The server's stream id from the latest header, if it sent one.
    public private(set) var streamID: String?
    let credentials: XMPPCredentials
    private var nextID = 0
    /// Whether the post-auth features offered a session that is not marked `<optional/>` (RFC 3921 §3).
    private var sessionOffered = false
    /// Stanzas ignored because they came before the bind request (only the first is reported).
    public private(set) var ignoredBeforeBind = 0
    /// Whether a stream of ours is open: its header was written (the first, or the one after a restart) and
    /// its footer not yet. A footer is written only then, so every close is well-formed for the stream the
    /// server is in.
    public private(set) var streamOpen = false
    /// Whether the driver asked to close (`close()`).
    public private(set) var closeRequested = false

    public init(credentials: XMPPCredentials) {
        self.credentials = credentials
    }

    public var isReady: Bool {
        if case .ready = state { return true }
        return false
    }

    /// The transport is up (TLS handshake done): open the stream.
    public mutating func start() -> [Action] {
        guard case .idle = state else { preconditionFailure("start() in state \(state)") }
        state = .awaitingStreamHeader(authenticated: false)
        streamOpen = true
        return [.sendStreamHeader(to: credentials.jidDomain)]
    }

    /// The driver wants to end the stream cleanly (RFC 6120 §4.4); it then waits for the server's footer
    /// (bounded by its own grace) and closes the transport.
    ///
    /// What is written depends on the stream the server is in:
    /// - before `start()`: nothing (no stream of ours exists);
    /// - while SASL is in progress: nothing yet, since the server may have answered `<success/>` and
    ///   restarted its stream already, and a footer would then land on a stream not yet opened (the server
    ///   answers `not-well-formed`). The close completes on the SASL outcome: after `<success/>` the
    ///   restart header and the footer (an empty new stream, well-formed), after `<failure/>` the footer;
    ///   if no outcome comes within the driver's grace, the driver closes the transport without a footer;
    /// - otherwise (our header or restart header is written): the footer, once.
    ///
    /// After `close()` nothing but the SASL outcome starts new work: features, bind and session answers are
    /// ignored, and stanzas are still delivered once ready (a server may send some before its footer).
    public mutating func close() -> [Action] {
        guard !closeRequested else { return [] }
        closeRequested = true
        if case .authenticating = state { return [] }
        return closeOurStream()
    }

    /// The server's `<stream:stream>` open tag arrived.
    public mutating func streamStarted(_ header: XMLElement) -> [Action] {
        switch state {
        case .awaitingStreamHeader(let authenticated):
            streamID = header.attribute("id")
            state = .awaitingFeatures(authenticated: authenticated)
            return []
        case .failed:
            return []
        default:
            return fail(.unexpectedStanza, message: "stream header in state \(state)")
        }
    }

    /// The server closed its stream (`</stream:stream>`, RFC 6120 §4.4).
    public mutating func streamEnded() -> [Action] {
        if case .failed = state { return [] }
        return fail(.streamClosedByPeer, message: "")
    }

    /// True when `stanzaReceived` would answer a `<message>` stanza (in any namespace: neither an IQ nor a
    /// stream error) with `[.deliver(stanza)]` alone, changing no state: from the bind request on, and after
    /// `close()` only once ready. `XMPPClient` asks this before handing a payload over without an element.
    public var deliversMessages: Bool {
        switch state {
        case .ready: return true
        case .binding, .establishingSession: return !closeRequested
        case .idle, .awaitingStreamHeader, .awaitingFeatures, .authenticating, .failed: return false
        }
    }

    /// One complete stanza (or nonza) arrived.
    public mutating func stanzaReceived(_ stanza: XMLElement) -> [Action] {
        if case .failed = state { return [] }
        if stanza.is("error", XMLNamespace.stream) {
            return streamErrorReceived(stanza)
        }
        if closeRequested {
            switch state {
            case .authenticating where stanza.namespace == XMLNamespace.sasl: return saslOutcome(stanza)
            case .ready:  // delivered, but nothing is answered after our footer
                return trafficStanza(stanza).filter { if case .send = $0 { false } else { true } }
            default: return []  // no new step after close(): our footer is out or waits for the SASL outcome
            }
        }
        switch state {
        case .idle, .awaitingStreamHeader:
            return fail(.unexpectedStanza, message: "<\(stanza.name)> before the stream header")
        case .awaitingFeatures(let authenticated):
            if stanza.is("features", XMLNamespace.stream) {
                return authenticated ? postAuthFeatures(stanza) : preAuthFeatures(stanza)
            }
            return stanzaBeforeBind(stanza, expected: "stream features")
        case .authenticating:
            if stanza.namespace == XMLNamespace.sasl {
                return saslOutcome(stanza)
            }
            return stanzaBeforeBind(stanza, expected: "SASL success or failure")
        case .binding(let iqID):
            if StreamNegotiation.isResponse(stanza, to: iqID) {
                return bindResult(stanza)
            }
            return trafficStanza(stanza)
        case .establishingSession(let iqID, let jid):
            if StreamNegotiation.isResponse(stanza, to: iqID) {
                return sessionResult(stanza, jid: jid)
            }
            return trafficStanza(stanza)
        case .ready:
            return trafficStanza(stanza)
        case .failed:
            return []
        }
    }

    /// A XEP-0199 ping for the driver's keepalive; the reply needs no tracking, since any inbound
    /// byte counts as life.
    public mutating func makePing() -> XMLElement {
        XMLElement(
            name: "iq", namespace: XMLNamespace.client,
            attributes: [.init(name: "type", value: "get"), .init(name: "id", value: makeID("ping"))],
            children: [XMLElement(name: "ping", namespace: XMLNamespace.ping)])
    }

    /// Marks the stream failed for a reason found outside (XML error, timeout, transport).
    public mutating func failExternally(_ error: XMPPError) -> [Action] {
        if case .failed = state { return [] }
        state = .failed
        return closeOurStream() + [.fail(redactingSecrets(error))]
    }

    // MARK: Steps

    private mutating func preAuthFeatures(_ features: XMLElement) -> [Action] {
        guard let mechanisms = features.child("mechanisms", namespace: XMLNamespace.sasl) else {
            return fail(.noSupportedMechanism, message: "the server offers no SASL mechanisms")
        }
        let offered = mechanisms.children("mechanism", namespace: XMLNamespace.sasl).map {
            $0.text.trimmingXMLWhitespace()
        }
        guard offered.contains("PLAIN") else {
            return fail(.noSupportedMechanism, message: "PLAIN not offered (offered: \(offered.joined(separator: ", ")))")
        }
        state = .authenticating
        let auth = XMLElement(
            name: "auth", namespace: XMLNamespace.sasl,
            attributes: [.init(name: "mechanism", value: "PLAIN")],
            text: credentials.plainInitialResponse)
        return [.send(auth)]
    }

    private mutating func saslOutcome(_ stanza: XMLElement) -> [Action] {
        if stanza.is("success", XMLNamespace.sasl) {
            state = .awaitingStreamHeader(authenticated: true)
            streamOpen = true
            // Closing: the server restarted its stream, so ours opens and closes empty (RFC 6120 §6.4.6).
            return [.restartStream(to: credentials.jidDomain)] + (closeRequested ? closeOurStream() : [])
        }
        if stanza.is("failure", XMLNamespace.sasl) {
            let condition = stanza.children.first { $0.namespace == XMLNamespace.sasl && $0.name != "text" }?.name
            // The server's text is shown, but never with our secret in it (a server may echo what it got).
            let text = credentials.redactingSecrets(stanza.child("text", namespace: XMLNamespace.sasl)?.text ?? "")
            let detail = text.isEmpty ? "the server refused the credentials for \(credentials.bareJID)"
                : "the server refused the credentials for \(credentials.bareJID): \(text)"
            return fail(.authenticationFailed, condition: condition ?? "not-authorized", message: detail)
        }
        if stanza.is("challenge", XMLNamespace.sasl) {
            // PLAIN has no challenges (RFC 4616); answering one would be guessing.
            return fail(.unexpectedStanza, message: "SASL challenge for PLAIN")
        }
        return fail(.unexpectedStanza, message: "expected SASL success or failure, got <\(stanza.name)> in the SASL namespace")
    }

    private mutating func postAuthFeatures(_ features: XMLElement) -> [Action] {
        guard features.child("bind", namespace: XMLNamespace.bind) != nil else {
            return fail(.bindFailed, message: "the server offers no resource binding")
        }
        sessionOffered = features.child("session", namespace: XMLNamespace.session)
            .map { $0.child("optional", namespace: XMLNamespace.session) == nil } ?? false
        let iqID = makeID("bind")
        state = .binding(iqID: iqID)
        var bind = XMLElement(name: "bind", namespace: XMLNamespace.bind)
        if let resource = credentials.resource {
            bind.children.append(XMLElement(name: "resource", namespace: XMLNamespace.bind, text: resource))
        }
        return [.send(iq(type: "set", id: iqID, child: bind))]
    }

    /// The answer to our bind request (RFC 6120 §7.6).
    private mutating func bindResult(_ stanza: XMLElement) -> [Action] {
        switch stanza.attribute("type") {
        case "result":
            guard let jid = stanza.child("bind", namespace: XMLNamespace.bind)?
                .child("jid", namespace: XMLNamespace.bind)?.text.trimmingXMLWhitespace(), !jid.isEmpty
            else {
                return fail(.bindFailed, message: "bind result without a JID")
            }
            if sessionOffered {
                let sessionID = makeID("session")
                state = .establishingSession(iqID: sessionID, jid: jid)
                return [.send(iq(type: "set", id: sessionID, child: XMLElement(name: "session", namespace: XMLNamespace.session)))]
            }
            state = .ready(jid: jid)
            return [.ready(jid: jid)]
        case "error":
            return fail(.bindFailed, condition: StreamNegotiation.stanzaErrorCondition(stanza), message: "the server refused to bind")
        default:
            return fail(.unexpectedStanza, message: "bind reply of type \(stanza.attribute("type") ?? "none")")
        }
    }

    /// The answer to our session request (RFC 3921 §3). An error is reported and otherwise ignored: the
    /// session is a no-op (RFC 6121 Appendix E), and the stream already carries traffic.
    private mutating func sessionResult(_ stanza: XMLElement, jid: String) -> [Action] {
        state = .ready(jid: jid)
        if stanza.attribute("type") == "result" {
            return [.ready(jid: jid)]
        }
        let condition = StreamNegotiation.stanzaErrorCondition(stanza) ?? "undefined-condition"
        let refusal = XMPPError(
            .sessionFailed, condition: condition,
            message: "the server refused the session request; continuing, since a session is a no-op (RFC 6121 Appendix E)")
        return [.notice(redactingSecrets(refusal)), .ready(jid: jid)]
    }

    /// A stanza once the bind request is out: traffic, whatever negotiation step is pending.
    private mutating func trafficStanza(_ stanza: XMLElement) -> [Action] {
        guard StreamNegotiation.isIQ(stanza) else { return [.deliver(stanza)] }
        if let answer = answerRequest(stanza) { return answer }
        // Results and errors: our own ping replies, or replies for the layer above.
        return [.deliver(stanza)]
    }

    /// A stanza before the bind request: nothing can be routed to us yet (RFC 6120 §7.1), so messages and
    /// presence are ignored (not ACKed: the server redelivers them once bound), IQ requests answered, IQ
    /// replies ignored (we have none outstanding). A nonza that does not fit the step fails the stream.
    private mutating func stanzaBeforeBind(_ stanza: XMLElement, expected: String) -> [Action] {
        let isStanza = stanza.namespace == XMLNamespace.client || stanza.namespace == nil
        switch stanza.name {
        case "iq" where isStanza:
            if let answer = answerRequest(stanza) { return answer }
            // The peer's type attribute is named only when it is one of the reply types (no peer text in logs).
            let type = stanza.attribute("type").flatMap { $0 == "result" || $0 == "error" ? $0 : nil } ?? "reply"
            return ignoreBeforeBind("an IQ \(type) that answers nothing of ours")
        case "message" where isStanza, "presence" where isStanza:
            return ignoreBeforeBind("<\(stanza.name)> before resource binding")
        default:
            let namespace = stanza.namespace.map { " in namespace '\($0)'" } ?? ""
            return fail(.unexpectedStanza, message: "expected \(expected), got <\(stanza.name)>\(namespace)")
        }
    }

    private mutating func ignoreBeforeBind(_ what: String) -> [Action] {
        ignoredBeforeBind += 1
        guard ignoredBeforeBind == 1 else { return [] }
        return [.notice(XMPPError(
            .unexpectedStanza,
            message: "ignored \(what) (RFC 6120 §7.1); later ones on this connection are ignored without notice"))]
    }

    /// The reply to an `iq get`/`set` (RFC 6120 §8.2.3): a result for a XEP-0199 ping, else
    /// `service-unavailable` (§8.4); nil for any other IQ.
    private func answerRequest(_ stanza: XMLElement) -> [Action]? {
        let type = stanza.attribute("type")
        guard type == "get" || type == "set" else { return nil }
        let id = stanza.attribute("id") ?? ""
        if type == "get", stanza.child("ping", namespace: XMLNamespace.ping) != nil {
            return [.send(reply(to: stanza, type: "result", id: id))]
        }
        var error = reply(to: stanza, type: "error", id: id)
        error.children = [XMLElement(
            name: "error", namespace: XMLNamespace.client,
            attributes: [.init(name: "type", value: "cancel")],
            children: [XMLElement(name: "service-unavailable", namespace: XMLNamespace.stanzas)])]
        return [.send(error)]
    }

    private mutating func streamErrorReceived(_ stanza: XMLElement) -> [Action] {
        let condition = stanza.children.first { $0.namespace == XMLNamespace.streams && $0.name != "text" }?.name
            ?? "undefined-condition"
        // The server's text is shown (logs, the `connection` event), but never with our secret in it.
        let text = credentials.redactingSecrets(stanza.child("text", namespace: XMLNamespace.streams)?.text ?? "")
        return fail(.streamError, condition: condition, message: text)
    }

    // MARK: Helpers

    private mutating func fail(_ kind: XMPPError.Kind, condition: String? = nil, message: String) -> [Action] {
        state = .failed
        return closeOurStream() + [.fail(redactingSecrets(XMPPError(kind, condition: condition, message: message)))]
    }

    /// The footer, when a stream of ours is open (each stream gets one footer, never one without a header).
    private mutating func closeOurStream() -> [Action] {
        guard streamOpen else { return [] }
        streamOpen = false
        return [.sendStreamFooter]
    }

    /// `error` without any echo of the server key or the PLAIN response: error texts quote the peer (element
    /// names, namespaces, attributes, mechanism names, XML errors), and a peer may echo what it got.
    private func redactingSecrets(_ error: XMPPError) -> XMPPError {
        var error = error
        error.message = credentials.redactingSecrets(error.message)
        error.condition = error.condition.map(credentials.redactingSecrets)
        return error
    }

    private mutating func makeID(_ prefix: String) -> String {
        nextID += 1
        return "\(prefix)-\(nextID)"
    }

    private func iq(type: String, id: String, child: XMLElement) -> XMLElement {
        XMLElement(
            name: "iq", namespace: XMLNamespace.client,
            attributes: [.init(name: "type", value: type), .init(name: "id", value: id)],
            children: [child])
    }

    private func reply(to stanza: XMLElement, type: String, id: String) -> XMLElement {
        var attributes: [XMLAttribute] = [.init(name: "type", value: type), .init(name: "id", value: id)]
        if let from = stanza.attribute("from") { attributes.append(.init(name: "to", value: from)) }
        return XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: attributes)
    }

    /// True for the answer to our request `iqID`: an IQ with that id that is not itself a request.
    static func isResponse(_ stanza: XMLElement, to iqID: String) -> Bool {
        guard isIQ(stanza), stanza.attribute("id") == iqID else { return false }
        let type = stanza.attribute("type")
        return type != "get" && type != "set"
    }

    /// True for an `<iq>` in `jabber:client`, or in no namespace: a server whose stream header omits the
    /// default namespace is taken leniently (ccs-protocol.md marks such details unconfirmed).
    static func isIQ(_ stanza: XMLElement) -> Bool {
        stanza.name == "iq" && (stanza.namespace == XMLNamespace.client || stanza.namespace == nil)
    }

    /// The defined condition inside a stanza's `<error>` child (RFC 6120 §8.3), if any.
    public static func stanzaErrorCondition(_ stanza: XMLElement) -> String? {
        stanza.child("error", namespace: stanza.namespace)?
            .children.first { $0.namespace == XMLNamespace.stanzas && $0.name != "text" }?.name
    }
}

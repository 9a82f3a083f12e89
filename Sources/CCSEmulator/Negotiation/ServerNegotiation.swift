import Foundation
import XMLStream

/// The server side of XMPP stream negotiation as CCS does it, as a pure state machine
/// (RFC 6120 §4–§7, ccs-protocol.md §1).
///
/// Events go in (`streamStarted(_:)`, `stanzaReceived(_:)`, `streamEnded()`), actions come out; the
/// connection driver performs them. No I/O, no clock. The flow over direct TLS (no STARTTLS):
///
///     client header → header + features(X-OAUTH2, X-GOOGLE-TOKEN, PLAIN) → <auth PLAIN> → <success/>,
///     restart: client header → header + features(bind, session) → bind IQ → result <jid>
///     → [session IQ → result] → bound
///
/// SASL PLAIN (RFC 4616) is checked against the configured sender ID, server key and JID domain: the
/// authcid must be exactly `SENDER_ID@JID_DOMAIN`, the authzid empty or equal to it. Anything else gets
/// `<failure><not-authorized/></failure>` and the stream is closed. Once bound, `message` stanzas are
/// delivered up; pings (XEP-0199) and the session IQ are answered; other IQs get `service-unavailable`.
///
/// Output is written the way CCS writes it, which differs from ccsd's own writer on purpose
/// (prefixed `stream:features`, ccs-protocol.md §1).
public struct ServerNegotiation: Sendable {
    /// What the driver must do, in order.
    public enum Action: Sendable, Equatable {
        /// Write this text (header, features, SASL outcome, IQ result) to the client.
        case send(String)
        /// Reset the XML parser: the client starts a new stream after `<success/>` (RFC 6120 §6.4.6).
        case resetParser
        /// SASL succeeded for this bare JID (for stats).
        case authenticated(bareJID: String)
        /// SASL failed (for stats and logs); `reason` never contains the key. A `.close` follows.
        case authenticationFailed(reason: String)
        /// A resource was bound: the connection may now carry CCS traffic.
        case bound(jid: String)
        /// A stanza for the CCS layer (a `message`, or an `iq result/error` reply to our pings).
        case deliver(XMLElement)
        /// A stanza nobody handles (presence, unknown element); counted as garbage, otherwise ignored.
        case unknownStanza(XMLElement)
        /// End the stream: write `streamError(condition)` if a condition is given, then `</stream:stream>`,
        /// then close TLS cleanly.
        case close(streamErrorCondition: String?, text: String?)
    }

    /// The negotiation step.
    public enum State: Sendable, Equatable {
        /// Waiting for the client's header; `authenticated` tells which of the two streams.
        case awaitingStreamHeader(authenticated: Bool)
        /// Pre-auth features sent; waiting for `<auth>`.
        case awaitingAuth
        /// Post-auth features sent; waiting for the bind IQ.
        case awaitingBind
        /// A resource is bound; CCS traffic flows.
        case bound(jid: String)
        /// The stream is over (failed, closed by either side).
        case closed
    }

    /// The SASL mechanisms offered, in CCS's order (ccs-protocol.md §1). Only PLAIN is implemented.
    public static let mechanisms = ["X-OAUTH2", "X-GOOGLE-TOKEN", "PLAIN"]

    public private(set) var state: State = .awaitingStreamHeader(authenticated: false)
    /// The sender ID (the SASL user's local part) clients must log in as.
    public let senderID: String
    /// The server key clients must present. Never logged.
    private let serverKey: String
    /// The JID domain: the header's `from`, the SASL user's domain and the bound JID's domain.
    public let jidDomain: String
    /// Prefix of the stream ids this machine writes (`id="PREFIX-1"`, then `-2` after the restart).
    private let streamIDPrefix: String
    /// The resource assigned when the client asks for none.
    private let defaultResource: String
    private var streamsStarted = 0
    /// Written before each stream header: a fault mode (`NegotiationFaults`: BOM, XML declaration). Default none.
    public var streamHeaderPrefix = ""
    /// Written right after `<success/>`: a fault mode (`NegotiationFaults`: a newline). Default none.
    public var afterSuccess = ""
    /// A wrong key's SASL failure echoes the key and the PLAIN response (`NegotiationFaults`). Default off.
    public var failureEchoesCredentials = false
    /// A fault mode (`ConnectionFault.saslFailure`): answer any `<auth>` with `<failure><CONDITION/></failure>`
    /// (RFC 6120 §6.5) and close. Default nil.
    public var forcedSASLFailure: String?

    /// - Parameters:
    ///   - connectionTag: makes stream ids and the assigned resource unique per connection (e.g. the connection id).
    public init(senderID: String, serverKey: String, jidDomain: String = "gcm.googleapis.com", connectionTag: String) {
        self.senderID = senderID
        self.serverKey = serverKey
        self.jidDomain = jidDomain
        self.streamIDPrefix = "EMU\(connectionTag)"
        self.defaultResource = "emu-\(connectionTag)"
    }

    /// Whether a resource is bound.
    public var isBound: Bool {
        if case .bound = state { return true }
        return false
    }

    /// The client's `<stream:stream>` open tag arrived (RFC 6120 §4.2). The `to` is not checked
    /// (CCS's behaviour for a wrong `to` is not documented; the SASL user's domain is what counts).
    public mutating func streamStarted(_ header: XMLElement) -> [Action] {
        guard case .awaitingStreamHeader(let authenticated) = state else {
            // A second header inside a live stream is not XML anyone can parse; the parser already refuses it.
            return close("not-well-formed", "unexpected stream header")
        }
        streamsStarted += 1
        let reply = streamHeaderPrefix + XMLWriter.streamHeader(to: nil, from: jidDomain, id: "\(streamIDPrefix)-\(streamsStarted)")
        if authenticated {
            state = .awaitingBind
            return [.send(reply + ServerStanzas.postAuthFeatures)]
        }
        state = .awaitingAuth
        return [.send(reply + ServerStanzas.preAuthFeatures(mechanisms: Self.mechanisms))]
    }

    /// The client sent `</stream:stream>` (RFC 6120 §4.4): answer with ours and close.
    public mutating func streamEnded() -> [Action] {
        if case .closed = state { return [] }
        state = .closed
        return [.close(streamErrorCondition: nil, text: nil)]
    }

    /// One complete depth-1 element from the client.
    public mutating func stanzaReceived(_ stanza: XMLElement) -> [Action] {
        switch state {
        case .closed:
            return []
        case .awaitingStreamHeader:
            return close("not-well-formed", "stanza before the stream header")
        case .awaitingAuth:
            return authReceived(stanza)
        case .awaitingBind:
            return bindReceived(stanza)
        case .bound(let jid):
            return boundStanza(stanza, jid: jid)
        }
    }

    // MARK: Steps

    private mutating func authReceived(_ stanza: XMLElement) -> [Action] {
        guard stanza.is("auth", XMLNamespace.sasl) else {
            return close("not-authorized", "authenticate first")
        }
        if let condition = forcedSASLFailure {
            return saslFailure(condition, reason: "fault sasl-failure:\(condition)")
        }
        let mechanism = stanza.attribute("mechanism") ?? ""
        guard mechanism == "PLAIN" else {
            let condition = Self.mechanisms.contains(mechanism) ? "not-authorized" : "invalid-mechanism"
            return saslFailure(condition, reason: "mechanism \(mechanism.isEmpty ? "(none)" : mechanism) not accepted")
        }
        let text = stanza.text.trimmingXMLWhitespace()
        guard !text.isEmpty, text != "=" else {
            return saslFailure("malformed-request", reason: "PLAIN without an initial response")
        }
        guard let decoded = Data(base64Encoded: text) else {
            return saslFailure("incorrect-encoding", reason: "the PLAIN response is not base64")
        }
        let parts = decoded.split(separator: 0, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return saslFailure("malformed-request", reason: "the PLAIN response is not authzid NUL authcid NUL password")
        }
        let authzid = String(decoding: parts[0], as: UTF8.self)
        let authcid = String(decoding: parts[1], as: UTF8.self)
        let password = String(decoding: parts[2], as: UTF8.self)
        let expected = "\(senderID)@\(jidDomain)"
        guard authcid == expected else {
            let reason: String
            if let at = authcid.lastIndex(of: "@") {
                let user = authcid[..<at], domain = authcid[authcid.index(after: at)...]
                reason = user != senderID ? "unknown sender ID \(user)" : "wrong JID domain \(domain) (expected \(jidDomain))"
            } else {
                reason = "user \(authcid) has no JID domain (expected \(expected))"
            }
            return saslFailure("not-authorized", reason: reason)
        }
        guard authzid.isEmpty || authzid == authcid else {
            return saslFailure("not-authorized", reason: "authzid \(authzid) differs from the user")
        }
        guard password == serverKey else {
            let echo = failureEchoesCredentials ? "wrong server key \(password) for \(authcid) in \(text)" : nil
            return saslFailure("not-authorized", reason: "wrong server key for \(expected)", text: echo)
        }
        state = .awaitingStreamHeader(authenticated: true)
        return [.send(ServerStanzas.saslSuccess + afterSuccess), .resetParser, .authenticated(bareJID: expected)]
    }

    private mutating func saslFailure(_ condition: String, reason: String, text: String? = nil) -> [Action] {
        state = .closed
        return [.send(ServerStanzas.saslFailure(condition: condition, text: text)), .authenticationFailed(reason: reason),
                .close(streamErrorCondition: nil, text: nil)]
    }

    private mutating func bindReceived(_ stanza: XMLElement) -> [Action] {
        guard stanza.is("iq", XMLNamespace.client), stanza.attribute("type") == "set",
              let bind = stanza.child("bind", namespace: XMLNamespace.bind)
        else {
            if stanza.is("iq", XMLNamespace.client), stanza.attribute("type") == "get",
               stanza.child("ping", namespace: XMLNamespace.ping) != nil {
                return [.send(ServerStanzas.iqResult(id: stanza.attribute("id") ?? ""))]
            }
            return close("not-authorized", "bind a resource first")
        }
        let requested = bind.child("resource", namespace: XMLNamespace.bind)?.text.trimmingXMLWhitespace() ?? ""
        let jid = "\(senderID)@\(jidDomain)/\(requested.isEmpty ? defaultResource : requested)"
        state = .bound(jid: jid)
        return [.send(ServerStanzas.bindResult(id: stanza.attribute("id") ?? "", jid: jid)), .bound(jid: jid)]
    }

    private func boundStanza(_ stanza: XMLElement, jid: String) -> [Action] {
        if stanza.is("message", XMLNamespace.client) { return [.deliver(stanza)] }
        guard stanza.is("iq", XMLNamespace.client) else { return [.unknownStanza(stanza)] }
        let id = stanza.attribute("id") ?? ""
        switch stanza.attribute("type") {
        case "get" where stanza.child("ping", namespace: XMLNamespace.ping) != nil:
            return [.send(ServerStanzas.iqResult(id: id))]
        case "set" where stanza.child("session", namespace: XMLNamespace.session) != nil:
            return [.send(ServerStanzas.iqResult(id: id))]
        case "get", "set":
            return [.send(ServerStanzas.iqError(id: id, condition: "service-unavailable", type: "cancel")),
                    .unknownStanza(stanza)]
        default:
            return [.deliver(stanza)]  // result/error: replies to our pings
        }
    }

    private mutating func close(_ condition: String, _ text: String) -> [Action] {
        state = .closed
        return [.close(streamErrorCondition: condition, text: text)]
    }
}

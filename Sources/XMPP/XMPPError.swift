/// Why an XMPP stream failed or ended (RFC 6120 §4.9 stream errors, §6.5 SASL failures, §7 bind).
///
/// `description` never contains the server key: SASL failures carry only the server's condition and text.
public struct XMPPError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// SASL `<failure/>` (RFC 6120 §6.5): wrong sender ID or server key. A configuration error: do not retry in a loop.
        case authenticationFailed
        /// The server offers no mechanism we can use (we need PLAIN).
        case noSupportedMechanism
        /// `<stream:error>` from the server (RFC 6120 §4.9); `condition` names it.
        case streamError
        /// The server closed the stream with `</stream:stream>` (RFC 6120 §4.4).
        case streamClosedByPeer
        /// Resource binding failed (RFC 6120 §7).
        case bindFailed
        /// The server answered the session IQ (RFC 3921 §3) with an error. Only ever a notice: the session
        /// is a no-op (RFC 6121 Appendix E), so the stream carries on.
        case sessionFailed
        /// The peer sent something that does not fit the negotiation step (RFC 6120 §4.3); as a notice, a
        /// stanza ignored before resource binding (RFC 6120 §7.1).
        case unexpectedStanza
        /// The inbound XML broke a rule; `condition` is the stream error condition we closed with.
        case invalidXML
        /// Negotiation did not finish in time.
        case negotiationTimedOut
        /// Nothing arrived from the peer within the dead-peer timeout, pings included.
        case deadPeer
        /// The TLS transport failed; `message` carries the TLS error text.
        case transport
        /// We closed the stream ourselves.
        case closedLocally
    }

    public var kind: Kind
    /// The RFC 6120 condition name, e.g. `not-authorized`, `conflict`, `policy-violation`.
    public var condition: String?
    /// Human-readable detail (server text, parser message, TLS reason).
    public var message: String

    public init(_ kind: Kind, condition: String? = nil, message: String) {
        self.kind = kind
        self.condition = condition
        self.message = message
    }

    /// True for failures a reconnect cannot fix (bad credentials, no usable mechanism). The SASL conditions
    /// `temporary-auth-failure` (RFC 6120 §6.5.13: "try again later") and `aborted` are not: they back off.
    public var isConfigurationError: Bool {
        switch kind {
        case .noSupportedMechanism: return true
        case .authenticationFailed: return condition != "temporary-auth-failure" && condition != "aborted"
        default: return false
        }
    }

    /// Stream error conditions (RFC 6120 §4.9.3) that reconnecting cannot heal: the server says our stream
    /// header or addressing is wrong (`host-unknown` §4.9.3.6, `improper-addressing` §4.9.3.7,
    /// `invalid-namespace` §4.9.3.10, `unsupported-version` §4.9.3.22), or that the logged-in entity is not
    /// allowed (`not-authorized` §4.9.3.12). Reconnecting in a loop only hammers the server.
    public static let unhealableStreamConditions: Set<String> = [
        "host-unknown", "improper-addressing", "invalid-namespace", "unsupported-version", "not-authorized",
    ]

    /// The condition, when the server ended the stream with one of `unhealableStreamConditions`: the
    /// caller backs off for long and says so. nil for every other end, `see-other-host` included: that is
    /// a drop like any other (ccsd does not follow the redirect; a client that did would still have to
    /// verify the new server's certificate against the configured host, never the one named in the error).
    public var unhealableCondition: String? {
        guard kind == .streamError, let condition, Self.unhealableStreamConditions.contains(condition) else { return nil }
        return condition
    }

    public var description: String {
        var text: String
        switch kind {
        case .authenticationFailed: text = "authentication failed"
        case .noSupportedMechanism: text = "no supported SASL mechanism"
        case .streamError: text = "stream error"
        case .streamClosedByPeer: text = "stream closed by server"
        case .bindFailed: text = "resource bind failed"
        case .sessionFailed: text = "session establishment failed"
        case .unexpectedStanza: text = "unexpected stanza"
        case .invalidXML: text = "invalid XML from server"
        case .negotiationTimedOut: text = "stream negotiation timed out"
        case .deadPeer: text = "peer silent beyond the dead-peer timeout"
        case .transport: text = "transport failed"
        case .closedLocally: text = "closed locally"
        }
        if let condition { text += " (\(condition))" }
        if !message.isEmpty { text += ": \(message)" }
        return text
    }
}

/// How a connection ended, as the driver saw it.
public enum ConnectionEnd: Sendable, Equatable {
    /// The transport or stream ended (server close, stream error, dead peer, TLS or connect failure).
    case lost(reason: String)
    /// The server ended the stream with a condition that reconnecting cannot heal (RFC 6120 §4.9.3:
    /// `host-unknown`, `improper-addressing`, `invalid-namespace`, `unsupported-version`, `not-authorized`;
    /// see `XMPPError.unhealableCondition`). The slot waits `refusedReconnectBackoff`; the daemon goes on.
    case refused(condition: String, reason: String)
    /// The server ended the stream with `conflict` (RFC 6120 §4.9.3.3): a new login with the same identity
    /// replaced it (a per-account session limit, or another process with the same credentials). The slot
    /// backs off whatever the connection's age (`ReconnectPolicy`).
    case replaced(reason: String)
    /// SASL failure or no usable mechanism: a configuration error.
    case authenticationFailed(reason: String)
    /// We closed it (shutdown).
    case closedLocally

    /// What an operator should check after a refusal with `condition` (RFC 6120 §4.9.3).
    public static func refusalHint(_ condition: String) -> String {
        switch condition {
        case "host-unknown", "improper-addressing": "jid_domain and the endpoint host"
        case "not-authorized": "sender_id, the server key and the project's CCS access"
        default: "the endpoint: it does not speak XMPP as CCS does"
        }
    }
}

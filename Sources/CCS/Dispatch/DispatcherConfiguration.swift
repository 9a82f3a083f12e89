/// Settings of the connection pool and the outcome policy (ccs-protocol.md §4–5).
public struct DispatcherConfiguration: Sendable, Equatable {
    /// The primary endpoint first; the second (if any) takes replacements when the first drains, and back.
    public var endpoints: [Endpoint]
    /// Connections kept open (not counting draining ones). 1…1000.
    public var connections: Int
    /// Unacked downstream messages per connection, 1…100.
    public var window: Int
    /// Attempts per message before its last retryable error becomes final. Drains and lost connections do not count.
    public var maxAttempts: Int
    /// Backoff of SERVICE_UNAVAILABLE / INTERNAL_SERVER_ERROR / unknown codes, per message.
    public var retryBackoff: Backoff
    /// Backoff of a token or topic after a RATE_EXCEEDED nack.
    public var rateLimitBackoff: Backoff
    /// Backoff of failed connections: connects and logins that fail, and connections that drop within
    /// `healthyConnectionSeconds` of login (`ReconnectPolicy`). A drop after a healthy connection reconnects at once.
    public var reconnectBackoff: Backoff
    /// Backoff after the server refused the stream with a condition reconnecting cannot heal
    /// (`ConnectionEnd.refused`, e.g. `host-unknown`). Default 5 min, doubling to 1 h.
    public var refusedReconnectBackoff: Backoff
    /// Seconds a connection must stay logged in before its drop counts as healthy (reconnect at once,
    /// failures cleared); a drop sooner counts as a failed connection. Default 10.
    public var healthyConnectionSeconds: Double
    /// Seconds an upstream message_id is remembered for deduplication.
    public var upstreamDedupeWindow: Double
    /// Seconds a sent message may wait for its ack or nack while its connection resolves nothing at all
    /// (or four times this, whatever the connection does) before the connection is taken as broken,
    /// dropped, and what was in flight on it resent elsewhere.
    public var ackTimeout: Double
    /// Seconds a draining connection may stay open before ccsd closes it itself (the server should close it).
    public var drainTimeout: Double
    /// Seed for the jitter draws; nil = random.
    public var seed: UInt64?

    public init(
        endpoints: [Endpoint], connections: Int = 1, window: Int = FlowWindow.maximum, maxAttempts: Int = 5,
        retryBackoff: Backoff = Backoff(base: 1, cap: 60), rateLimitBackoff: Backoff = Backoff(base: 1, cap: 300),
        reconnectBackoff: Backoff = Backoff(base: 1, cap: 60), upstreamDedupeWindow: Double = 600,
        ackTimeout: Double = 60, drainTimeout: Double = 300,
        refusedReconnectBackoff: Backoff = Backoff(base: 300, cap: 3600),
        healthyConnectionSeconds: Double = ReconnectPolicy.defaultHealthyAfter, seed: UInt64? = nil
    ) {
        self.endpoints = endpoints
        self.connections = connections
        self.window = window
        self.maxAttempts = maxAttempts
        self.retryBackoff = retryBackoff
        self.rateLimitBackoff = rateLimitBackoff
        self.reconnectBackoff = reconnectBackoff
        self.upstreamDedupeWindow = upstreamDedupeWindow
        self.ackTimeout = ackTimeout
        self.drainTimeout = drainTimeout
        self.refusedReconnectBackoff = refusedReconnectBackoff
        self.healthyConnectionSeconds = healthyConnectionSeconds
        self.seed = seed
    }

    /// The reconnect rule these settings make.
    public var reconnectPolicy: ReconnectPolicy {
        ReconnectPolicy(backoff: reconnectBackoff, refusedBackoff: refusedReconnectBackoff, healthyAfter: healthyConnectionSeconds)
    }
}

/// What the app is told (one JSON line each on the events outlet).
public enum DispatcherEvent: Sendable, Equatable {
    case accepted(messageID: String)
    /// `line` is the intake line number, when the message came from a line.
    case rejected(messageID: String?, field: String, error: String, line: Int?)
    case acked(messageID: String, to: String, canonicalRegistrationID: String?, group: GroupOutcome?)
    /// `final` false means it will be retried. `invalidToken` marks errors that mean "remove this token".
    case nacked(messageID: String, error: String, description: String?, final: Bool, invalidToken: Bool, group: GroupOutcome?)
    case expired(messageID: String)
    case upstream(InboundMessage.Upstream)
    case receipt(InboundMessage.Receipt)
    case connection(id: Int, endpoint: Endpoint, state: ConnectionState, reason: String?)

    /// True for the events that end a downstream message.
    public var isFinal: Bool {
        switch self {
        case .acked, .expired: true
        case .nacked(_, _, _, let final, _, _): final
        default: false
        }
    }
}

/// Device-group counts from an ack or nack (ccs-protocol.md §3, shape unconfirmed).
public struct GroupOutcome: Sendable, Equatable {
    public var success: Int
    public var failure: Int
    public var failedRegistrationIDs: [String]

    public init(success: Int, failure: Int, failedRegistrationIDs: [String]) {
        self.success = success
        self.failure = failure
        self.failedRegistrationIDs = failedRegistrationIDs
    }
}

public enum ConnectionState: String, Sendable, Equatable {
    case connected, draining, closed, reconnecting
}

/// What the driver must do for the dispatcher, in order.
public enum DispatcherAction: Sendable, Equatable {
    /// Open connection `id` to `endpoint` (TLS, then XMPP login).
    case open(connection: Int, endpoint: Endpoint)
    /// Send this downstream message on the connection.
    case send(connection: Int, record: MessageRecord)
    /// Send an ACK for an upstream message or receipt on the connection it arrived on (§3). Never windowed.
    case ack(connection: Int, to: String, messageID: String)
    /// Close the stream cleanly.
    case close(connection: Int)
    /// Drop the connection at once: the dispatcher already counts it as ended (no ack within `ackTimeout`).
    case abort(connection: Int, reason: String)
    /// Tell the app.
    case event(DispatcherEvent)
    /// A configuration error no reconnect can fix (authentication): stop the daemon with this reason.
    case stop(reason: String)
}

/// How a connection ended, as the driver saw it.
public enum ConnectionEnd: Sendable, Equatable {
    /// The transport or stream ended (server close, stream error, dead peer, TLS or connect failure).
    case lost(reason: String)
    /// The server ended the stream with a condition that reconnecting cannot heal (RFC 6120 §4.9.3:
    /// `host-unknown`, `improper-addressing`, `invalid-namespace`, `unsupported-version`, `not-authorized`;
    /// see `XMPPError.unhealableCondition`). The slot waits `refusedReconnectBackoff`; the daemon goes on.
    case refused(condition: String, reason: String)
    /// SASL failure or no usable mechanism: a configuration error.
    case authenticationFailed(reason: String)
    /// We closed it (shutdown).
    case closedLocally
}

/// Counters for logs and stats.
public struct DispatcherCounters: Sendable, Equatable {
    public var sent = 0
    public var acked = 0
    public var nacked = 0
    public var retried = 0
    public var expired = 0
    public var upstream = 0
    public var upstreamDuplicates = 0
    public var receipts = 0
    public var unknownMessageTypes = 0
    public var unknownControlTypes = 0
    public var unmatchedResolutions = 0
    public var drains = 0
    /// Connections opened at once because a healthy connection dropped or drained.
    public var reconnects = 0
    /// Connections that failed (never logged in, or dropped within `healthyConnectionSeconds`): each
    /// puts its slot into backoff.
    public var failedConnections = 0
    /// Connections the server refused with a condition reconnecting cannot heal.
    public var refusedConnections = 0
    /// Stanza errors and `BAD_ACK` nacks about an ACK ccsd sent: logged and counted, never resolving a
    /// downstream message.
    public var ackErrors = 0
    /// Connections dropped because an ack did not come within `ackTimeout`.
    public var ackTimeouts = 0
}

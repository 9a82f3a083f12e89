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
    /// Whether accepted messages survive the process (a durable store): when authentication fails, the
    /// messages not final stay outstanding (stored, resent after the operator fixes the key and restarts)
    /// instead of ending `nacked` `AUTHENTICATION_FAILED`. Default false (the memory store: they would be lost).
    public var keepsMessagesOnStop = false

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

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
    /// ACKs not sent because their connection ended before the hand-over was recorded (CCS redelivers).
    public var acksDropped = 0
    /// Submissions refused (duplicates, closed intake, store unavailable or failing).
    public var rejected = 0
}

/// Counters for logs and stats.
public struct DispatcherCounters: Sendable, Equatable {
    /// Messages stored and accepted (restored ones not counted again).
    public var accepted = 0
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
    /// Of `rejected`, those the submitter may send again later (`retryable: true`).
    public var rejectedRetryable = 0
    /// Nacked events by error code (a CCS code, a stanza error condition, or `SHUTDOWN`): final ones and
    /// those retried. At most `maxNackCodes` codes are kept apart; the rest count under `otherNackCode`,
    /// so a server inventing codes cannot grow this without bound.
    public var nacksByCode: [String: NackTally] = [:]

    /// Nacks of one error code.
    public struct NackTally: Sendable, Equatable {
        /// Nacked events with `final: true`.
        public var final = 0
        /// Nacked events with `final: false` (the message is retried).
        public var retried = 0

        public init(final: Int = 0, retried: Int = 0) {
            self.final = final
            self.retried = retried
        }
    }

    /// All zero.
    public init() {}

    /// Distinct codes kept in `nacksByCode`.
    public static let maxNackCodes = 64
    /// The code under which further codes are counted.
    public static let otherNackCode = "OTHER"

    /// Counts one nacked event.
    mutating func countNack(code: String, final: Bool) {
        let key = nacksByCode[code] != nil || nacksByCode.count < Self.maxNackCodes - 1 ? code : Self.otherNackCode
        if final { nacksByCode[key, default: NackTally()].final += 1 } else { nacksByCode[key, default: NackTally()].retried += 1 }
    }
}

/// What the app is told (one JSON line each on the events outlet). Every event but `accepted` reaches the
/// driver as `DispatcherAction.record`, to be journaled before it is written; `accepted` is journaled by the
/// store in the same transaction as the message it reports (`DispatcherAction.persist`).
public enum DispatcherEvent: Sendable, Equatable {
    case accepted(messageID: String)
    /// `line` is the intake line number, when the message came from a line. `retryable` is true when the
    /// same message may be submitted again later (ccsd shutting down, the store unavailable or failing).
    /// `outcome` is the stored final event (a JSON object's text) of a message_id that is already final.
    case rejected(messageID: String?, field: String, error: String, line: Int?, retryable: Bool = false, outcome: String? = nil)
    case acked(messageID: String, to: String, canonicalRegistrationID: String?, group: GroupOutcome?)
    /// `final` false means it will be retried. `invalidToken` marks errors that mean "remove this token".
    /// `error` is a CCS code (`CCSErrorCode`), a stanza error condition (RFC 6120 §8.3), or ccsd's `SHUTDOWN`.
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

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

/// Device-group counts from an ack or nack (ccs-protocol.md §3, shape unconfirmed), as the server wrote them.
///
/// Nothing is wrapped, rounded or dropped (issue 7): a number keeps its exact text (`JSONValue.number`,
/// `18446744073709551617`, `-0`, `1E2`; `.int` when it is written as a plain Int64), a non-number value and
/// non-string `failed_registration_ids` elements are kept as received. A number no 64-bit float holds
/// (`1e400`) cannot be written for JSON readers (Foundation refuses the whole line): it is `null` here and
/// named in `decodeError`. Absent members: `success` 0, `failure` the number of failed ids, failed ids `[]`.
/// Decisions use `successCount`/`failureCount`, which are set only for exact integers.
public struct GroupOutcome: Sendable, Equatable {
    /// Members reached, as written.
    public var success: JSONValue
    /// Members failed, as written.
    public var failure: JSONValue
    /// The tokens that failed, as written: an array, normally of strings.
    public var failedRegistrationIDs: JSONValue
    /// What could not be kept as written, e.g. `failure: number 1e400 is beyond the range of a 64-bit float;
    /// read as null`; nil when everything was.
    public var decodeError: String?

    public init(success: JSONValue?, failure: JSONValue?, failedRegistrationIDs: JSONValue?, decodeError: String? = nil) {
        let failed = failedRegistrationIDs ?? .array([])
        self.success = success ?? .int(0)
        self.failure = failure ?? .int(Int64(failed.arrayValue?.count ?? 0))
        self.failedRegistrationIDs = failed
        self.decodeError = decodeError
    }

    /// Counts and tokens that fit the usual types (tests, fixtures).
    public init(success: Int, failure: Int, failedRegistrationIDs: [String]) {
        self.init(success: .int(Int64(success)), failure: .int(Int64(failure)),
                  failedRegistrationIDs: .array(failedRegistrationIDs.map(JSONValue.string)))
    }

    /// `success` when it is exactly an integer that Int64 holds (`-0`, `0.0` and `1E2` are; `1e-400` is not).
    public var successCount: Int64? { success.exactIntegerValue }
    /// `failure` when it is exactly an integer that Int64 holds.
    public var failureCount: Int64? { failure.exactIntegerValue }

    /// True when every member failed: failed ids were listed and `success` is exactly 0 (§3).
    public var everyMemberFailed: Bool {
        failedRegistrationIDs.arrayValue?.isEmpty == false && successCount == 0
    }
}

public enum ConnectionState: String, Sendable, Equatable {
    case connected, draining, closed, reconnecting
}

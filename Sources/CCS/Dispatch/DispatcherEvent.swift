/// What the app is told (one JSON line each on the events outlet). Every event but `accepted` reaches the
/// driver as `DispatcherAction.record`, to be journaled before it is written; `accepted` is journaled by the
/// store in the same transaction as the message it reports (`DispatcherAction.persist`).
///
/// Kept small (`ValueLayoutTests`): an event is copied many times on its way (inside
/// `DispatcherAction.record`), and a value over 128 bytes is copied by a call to `memmove`. So the per-message
/// cases (`accepted`, `acked`, `nacked`, `expired`) are inline, and the rare or large ones (`rejected`,
/// `upstream`, `receipt`: 136–144 bytes inline) are `indirect`, one reference each.
public enum DispatcherEvent: Sendable, Equatable {
    case accepted(messageID: String)
    /// `line` is the intake line number, when the message came from a line. `retryable` is true when the
    /// same message may be submitted again later (ccsd shutting down, the store unavailable or failing).
    /// `outcome` is the stored final event (a JSON object's text) of a message_id that is already final.
    indirect case rejected(messageID: String?, field: String, error: String, line: Int?, retryable: Bool = false, outcome: String? = nil)
    case acked(messageID: String, to: String, canonicalRegistrationID: String?, group: GroupOutcome?)
    /// `final` false means it will be retried. `invalidToken` marks errors that mean "remove this token".
    /// `error` is a CCS code (`CCSErrorCode`), a stanza error condition (RFC 6120 §8.3), or ccsd's `SHUTDOWN`.
    case nacked(messageID: String, error: String, description: String?, final: Bool, invalidToken: Bool, group: GroupOutcome?)
    case expired(messageID: String)
    indirect case upstream(InboundMessage.Upstream)
    indirect case receipt(InboundMessage.Receipt)
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
/// (`1e400`) cannot be written for JSON readers (`JSONValue.parse` refuses the whole line): it is `null` here and
/// named in `decodeError`. Absent members: `success` 0, `failure` the number of failed ids, failed ids `[]`.
/// Decisions use `successCount`/`failureCount`, which are set only for exact integers.
///
/// One reference wide (`ValueLayoutTests`): the fields live in an immutable box shared by every copy, and a
/// setter replaces the box (copy on write). Most acks and nacks have no group, and these fields inline (88
/// bytes) would more than double every ack in `DispatcherEvent` and in `InboundMessage`, values copied many
/// times per message (one over 128 bytes is copied by a call to `memmove`, a smaller one by inline moves).
public struct GroupOutcome: Sendable, Equatable {
    private final class Fields: Sendable {
        let success: JSONValue
        let failure: JSONValue
        let failedRegistrationIDs: JSONValue
        let decodeError: String?

        init(success: JSONValue, failure: JSONValue, failedRegistrationIDs: JSONValue, decodeError: String?) {
            self.success = success
            self.failure = failure
            self.failedRegistrationIDs = failedRegistrationIDs
            self.decodeError = decodeError
        }
    }

    private var fields: Fields

    /// Members reached, as written.
    public var success: JSONValue {
        get { fields.success }
        set { fields = Fields(success: newValue, failure: failure, failedRegistrationIDs: failedRegistrationIDs, decodeError: decodeError) }
    }
    /// Members failed, as written.
    public var failure: JSONValue {
        get { fields.failure }
        set { fields = Fields(success: success, failure: newValue, failedRegistrationIDs: failedRegistrationIDs, decodeError: decodeError) }
    }
    /// The tokens that failed, as written: an array, normally of strings.
    public var failedRegistrationIDs: JSONValue {
        get { fields.failedRegistrationIDs }
        set { fields = Fields(success: success, failure: failure, failedRegistrationIDs: newValue, decodeError: decodeError) }
    }
    /// What could not be kept as written, e.g. `failure: number 1e400 is beyond the range of a 64-bit float;
    /// read as null`; nil when everything was.
    public var decodeError: String? {
        get { fields.decodeError }
        set { fields = Fields(success: success, failure: failure, failedRegistrationIDs: failedRegistrationIDs, decodeError: newValue) }
    }

    public init(success: JSONValue?, failure: JSONValue?, failedRegistrationIDs: JSONValue?, decodeError: String? = nil) {
        let failed = failedRegistrationIDs ?? .array([])
        fields = Fields(success: success ?? .int(0), failure: failure ?? .int(Int64(failed.arrayValue?.count ?? 0)),
                        failedRegistrationIDs: failed, decodeError: decodeError)
    }

    /// Equal when every field is.
    public static func == (lhs: GroupOutcome, rhs: GroupOutcome) -> Bool {
        lhs.fields === rhs.fields
            || (lhs.success == rhs.success && lhs.failure == rhs.failure
                && lhs.failedRegistrationIDs == rhs.failedRegistrationIDs && lhs.decodeError == rhs.decodeError)
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

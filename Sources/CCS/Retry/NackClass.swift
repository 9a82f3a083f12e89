/// What a nack's error code means and what ccsd does about it: the table in ccs-protocol.md §4.
public enum NackClass: Sendable, Equatable {
    /// Final: the token is bad (BAD_REGISTRATION, DEVICE_UNREGISTERED, SENDER_ID_MISMATCH); the app should drop it.
    case invalidToken
    /// Final: our bug or bad input (INVALID_JSON), or project configuration
    /// (INVALID_APNS_CREDENTIAL, AUTHENTICATION_FAILED).
    case permanent
    /// About an ACK ccsd sent, not about a downstream message (BAD_ACK): its message_id is the upstream
    /// message_id ccsd ACKed, which may equal a downstream one. Logged and counted; resolves nothing.
    case aboutAck
    /// Retry this message with exponential backoff (SERVICE_UNAVAILABLE, INTERNAL_SERVER_ERROR, unknown codes).
    case transient
    /// Retry later, holding back every message to this token (DEVICE_MESSAGE_RATE_EXCEEDED) or topic
    /// (TOPICS_MESSAGE_RATE_EXCEEDED) only.
    case rateLimited
    /// The connection is draining: resend at once elsewhere; not an attempt (§5).
    case connectionDraining

    /// Classifies a CCS error code. Unknown codes are treated as INTERNAL_SERVER_ERROR.
    public init(code: CCSErrorCode) {
        switch code {
        case .badRegistration, .deviceUnregistered, .senderIDMismatch:
            self = .invalidToken
        case .invalidJSON, .invalidAPNSCredential, .authenticationFailed:
            self = .permanent
        case .badACK:
            self = .aboutAck
        case .deviceMessageRateExceeded, .topicsMessageRateExceeded:
            self = .rateLimited
        case .connectionDraining:
            self = .connectionDraining
        default:
            self = .transient
        }
    }

    public var isFinal: Bool { self == .invalidToken || self == .permanent }
}

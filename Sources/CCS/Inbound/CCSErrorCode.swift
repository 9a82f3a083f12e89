/// A CCS nack `error` code (ccs-protocol.md §4), typed so each spelling lives in one place.
///
/// Extensible: a code CCS adds later is still a value (`CCSErrorCode(rawValue:)`), classified as transient
/// by `NackClass`. `ExpressibleByStringLiteral` lets tests and fixtures write `"BAD_ACK"`.
public struct CCSErrorCode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    // Final, "drop this token" (§4).
    public static let badRegistration = CCSErrorCode("BAD_REGISTRATION")
    public static let deviceUnregistered = CCSErrorCode("DEVICE_UNREGISTERED")
    public static let senderIDMismatch = CCSErrorCode("SENDER_ID_MISMATCH")
    // Final, our bug or project configuration (§4).
    public static let invalidJSON = CCSErrorCode("INVALID_JSON")
    public static let invalidAPNSCredential = CCSErrorCode("INVALID_APNS_CREDENTIAL")
    public static let authenticationFailed = CCSErrorCode("AUTHENTICATION_FAILED")
    /// About an ACK ccsd sent, not a downstream message (§4).
    public static let badACK = CCSErrorCode("BAD_ACK")
    // Retried (§4).
    public static let serviceUnavailable = CCSErrorCode("SERVICE_UNAVAILABLE")
    public static let internalServerError = CCSErrorCode("INTERNAL_SERVER_ERROR")
    public static let deviceMessageRateExceeded = CCSErrorCode("DEVICE_MESSAGE_RATE_EXCEEDED")
    public static let topicsMessageRateExceeded = CCSErrorCode("TOPICS_MESSAGE_RATE_EXCEEDED")
    /// The connection is draining (§5). CCS spells the control_type the same (`ControlType.connectionDraining`).
    public static let connectionDraining = CCSErrorCode("CONNECTION_DRAINING")
    /// What a nack without an `error` field is read as (retried).
    public static let unknown = CCSErrorCode("UNKNOWN")

    /// ccsd's own code, not CCS's: the final `nacked` of a message abandoned when a graceful stop without a
    /// durable store ran out of grace.
    public static let shutdown = CCSErrorCode("SHUTDOWN")
}

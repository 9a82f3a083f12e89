import CCS

/// A rule that nacks downstream messages whose `to` starts with a prefix (ccs-protocol.md §4).
///
/// Rules are tried in order; the first whose prefix matches decides. With `firstAttemptOnly` only the
/// first attempt of a message_id is nacked and later attempts are acked (a transient error that clears,
/// e.g. `flaky-` → SERVICE_UNAVAILABLE); otherwise every attempt is nacked (a final error, e.g.
/// `bad-` → BAD_REGISTRATION).
public struct NackRule: Sendable, Equatable, CustomStringConvertible {
    /// Matched against the start of the downstream `to`.
    public var prefix: String
    /// The CCS error code written in the nack's `error`, e.g. `BAD_REGISTRATION`.
    public var code: CCSErrorCode
    /// Nack only the first attempt of each message_id, ack the later ones.
    public var firstAttemptOnly: Bool

    public init(prefix: String, code: CCSErrorCode, firstAttemptOnly: Bool = false) {
        self.prefix = prefix
        self.code = code
        self.firstAttemptOnly = firstAttemptOnly
    }

    /// The default rules: `bad-` → BAD_REGISTRATION, `unreg-` → DEVICE_UNREGISTERED, `flaky-` →
    /// SERVICE_UNAVAILABLE once, `rate-` → DEVICE_MESSAGE_RATE_EXCEEDED once.
    public static let defaults: [NackRule] = [
        NackRule(prefix: "bad-", code: .badRegistration),
        NackRule(prefix: "unreg-", code: .deviceUnregistered),
        NackRule(prefix: "flaky-", code: .serviceUnavailable, firstAttemptOnly: true),
        NackRule(prefix: "rate-", code: .deviceMessageRateExceeded, firstAttemptOnly: true),
    ]

    /// Parses the command-line form `PREFIX=CODE` or `PREFIX=CODE:once`.
    /// - Returns: nil when there is no `=`, the prefix is empty or the code is empty.
    public init?(parsing text: String) {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let prefix = String(text[..<equals])
        var code = String(text[text.index(after: equals)...])
        var once = false
        if code.hasSuffix(":once") {
            once = true
            code.removeLast(":once".count)
        }
        guard !prefix.isEmpty, !code.isEmpty, !code.contains(":") else { return nil }
        self.init(prefix: prefix, code: CCSErrorCode(rawValue: code), firstAttemptOnly: once)
    }

    /// `PREFIX=CODE[:once]`.
    public var description: String { "\(prefix)=\(code)\(firstAttemptOnly ? ":once" : "")" }
}

import CCS

/// Decides the ack or nack for one downstream message attempt (ccs-protocol.md §3–4). Pure apart from
/// its seeded generator.
///
/// Order: a missing target → nack INVALID_JSON; the first matching `NackRule` (by `to` prefix; rules with
/// `firstAttemptOnly` nack attempt 1 only); then `nackRate` → SERVICE_UNAVAILABLE; then an ack, which is a
/// device-group ack for a `to` starting with `group-` (`success` 2, `failure` 1,
/// `failed_registration_ids` `["failed-member-of-TO"]`) and carries `registration_id` `canonical-TO`
/// for a `to` starting with `canon-`. A `to` starting with `group-unusual-` gets a device-group ack whose
/// counts no client integer type holds, as independent servers write them (`unusualGroupSuccess` …).
public struct DownstreamPolicy: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// Ack; `json` is the ack payload.
        case ack(json: String)
        /// Nack with `code`; `json` is the nack payload.
        case nack(code: CCSErrorCode, json: String)

        public var json: String {
            switch self {
            case .ack(let json), .nack(_, let json): json
            }
        }
    }

    public var rules: [NackRule]
    /// Probability 0...1 of SERVICE_UNAVAILABLE for a message no rule matched.
    public var nackRate: Double
    private var random: SplitMix64

    public init(rules: [NackRule], nackRate: Double, seed: UInt64) {
        self.rules = rules
        self.nackRate = nackRate
        self.random = SplitMix64(seed: seed)
    }

    /// The outcome of attempt number `attempt` (1 = first time this message_id arrived) of a message.
    public mutating func decide(messageID: String, target: String?, attempt: Int) -> Outcome {
        guard let target else {
            return .nack(code: .invalidJSON, json: Self.nack(messageID: messageID, from: nil, code: .invalidJSON,
                                                               description: "Missing Required Field: to"))
        }
        if !rules.isEmpty, let rule = rules.first(where: { target.hasPrefix($0.prefix) }) {
            if !rule.firstAttemptOnly || attempt <= 1 {
                return .nack(code: rule.code, json: Self.nack(messageID: messageID, from: target, code: rule.code,
                                                              description: Self.describe(rule.code, target)))
            }
        } else if nackRate > 0, Double.random(in: 0..<1, using: &random) < nackRate {
            return .nack(code: .serviceUnavailable, json: Self.nack(
                messageID: messageID, from: target, code: .serviceUnavailable,
                description: Self.describe(.serviceUnavailable, target)))
        }
        var ack = OrderedJSON()
        ack.add("from", target)
        ack.add("message_id", messageID)
        ack.add("message_type", "ack")
        // The special targets start with `g` or `c`: one byte spares the prefix checks for all others.
        let lead = target.utf8.first
        guard lead == UInt8(ascii: "g") || lead == UInt8(ascii: "c") else { return .ack(json: ack.text) }
        if target.hasPrefix("group-unusual-") {
            ack.add("success", raw: Self.unusualGroupSuccess)
            ack.add("failure", raw: Self.unusualGroupFailure)
            ack.add("failed_registration_ids", raw: Self.unusualGroupFailedRegistrationIDs(target))
        } else if target.hasPrefix("group-") {
            ack.add("success", .int(2))
            ack.add("failure", .int(1))
            ack.add("failed_registration_ids", .array([.string("failed-member-of-\(target)")]))
        }
        if target.hasPrefix("canon-") {
            ack.add("registration_id", "canonical-\(target)")
        }
        return .ack(json: ack.text)
    }

    /// The counts of a `group-unusual-` ack, as JSON text: `success` beyond UInt64, `failure` beyond any
    /// 64-bit float, and `failed_registration_ids` with a number and a negative zero among the tokens.
    public static let unusualGroupSuccess = "18446744073709551617"
    public static let unusualGroupFailure = "1e400"
    public static func unusualGroupFailedRegistrationIDs(_ target: String) -> String {
        #"["failed-member-of-\#(target)",5,-0]"#
    }

    /// `{"message_type":"nack","message_id":ID,"from":TO,"error":CODE,"error_description":"…"}` (§3).
    public static func nack(messageID: String, from: String?, code: CCSErrorCode, description: String) -> String {
        var nack = OrderedJSON()
        nack.add("message_type", "nack")
        nack.add("message_id", messageID)
        if let from { nack.add("from", from) }
        nack.add("error", code.rawValue)
        nack.add("error_description", description)
        return nack.text
    }

    static func describe(_ code: CCSErrorCode, _ target: String) -> String {
        switch code {
        case .badRegistration: "Invalid token on 'to' field: \(target)"
        case .deviceUnregistered: "Device unregistered: \(target)"
        case .serviceUnavailable: "Service temporarily unavailable, please retry"
        case .deviceMessageRateExceeded: "Too many messages for device \(target)"
        case .connectionDraining: "Connection is draining, please resend on another connection"
        default: "\(code) (emulated)"
        }
    }
}

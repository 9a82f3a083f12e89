/// Why ccsd refused a downstream message at intake, before it used a slot in the 100-message window.
///
/// Each rule has its own `code`; `field` is the dotted path of the offending field (`data.google.sent_time`,
/// `notification.color`, `message.android.ttl` for v1 input; `""` when the line is not a JSON object);
/// `rule` says in words what the field must be; `value` is what it got, rendered as JSON and cut to at most
/// 80 characters so that long payloads and registration tokens are never echoed in full.
///
/// `description` reads `time_to_live: must be an integer number of seconds from 0 to 2419200 (got "600")`;
/// it goes into the `rejected` event, for the app that wrote the line. Logs use `logDescription`, which
/// carries no value at all (see there). A number is quoted as written in the intake line (`2419201.0`,
/// `1e400`), not as it was read (see `DownstreamIntake.parse(line:now:)` for how, and its limits).
/// Source: ccs-protocol.md §3 and the FCM XMPP/HTTP references; decisions in docs/v1-mapping.md.
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One code per rule, so that callers and tests can tell rules apart without parsing text.
    public enum Code: String, Sendable, Equatable {
        /// The line is not JSON, or not a JSON object.
        case notJSONObject
        /// Not exactly one of `to` / `condition` (or v1 token / topic / condition).
        case targetCount
        /// `registration_ids`: multicast is HTTP only.
        case multicast
        /// `to` is not a token, notification key or `/topics/NAME`.
        case targetSyntax
        /// A topic name outside `[a-zA-Z0-9-_.~%]+`.
        case topicName
        /// A condition that does not parse.
        case conditionSyntax
        /// A condition with more than two `&&`/`||` operators.
        case conditionOperators
        /// A field of the wrong JSON type.
        case type
        /// `message_id` present but empty.
        case messageID
        /// `priority` not `normal` or `high`.
        case priority
        /// `time_to_live` not an integer from 0 to 2419200.
        case timeToLive
        /// A data key that FCM reserves.
        case reservedDataKey
        /// A data value that is not a string.
        case dataValue
        /// `notification.color` not `#rrggbb`.
        case color
        /// `*_loc_args` not an array of strings (or a string holding one).
        case locArgs
        /// data + notification over the size limit.
        case payloadSize
        /// A field ccsd does not know.
        case unknownField
        /// A v1 field with no legacy XMPP equivalent.
        case noLegacyEquivalent
        /// Two v1 fields that map to the same legacy field with different values.
        case conflict
        /// A v1 value in the wrong format (ttl duration, header value, apns-priority, …).
        case v1Format
        /// The line is longer than intake takes.
        case lineTooLong

        /// The rule in words for logs: fixed text that quotes nothing from the line, phrased to follow a field name.
        public var logSummary: String {
            switch self {
            case .notJSONObject: "the line is not a JSON object"
            case .targetCount: "needs exactly one target (to or condition; v1: token, topic or condition)"
            case .multicast: "is not available over XMPP (multicast is HTTP only)"
            case .targetSyntax: "is not a registration token, notification key or /topics/NAME"
            case .topicName: "is not a valid topic name"
            case .conditionSyntax: "is not a valid condition"
            case .conditionOperators: "has too many operators"
            case .type: "has the wrong JSON type"
            case .messageID: "is not a valid message_id"
            case .priority: "is not a valid priority"
            case .timeToLive: "is not a valid time_to_live (whole seconds from 0 to 2419200)"
            case .reservedDataKey: "is a reserved data key"
            case .dataValue: "must be a string (data values are strings)"
            case .color: "must be a color in the form #rrggbb"
            case .locArgs: "must be an array of strings"
            case .payloadSize: "makes the payload larger than the limit"
            case .unknownField: "is not a field ccsd knows"
            case .noLegacyEquivalent: "has no legacy XMPP equivalent"
            case .conflict: "conflicts with another field that sets the same legacy field"
            case .v1Format: "is not in the expected format"
            case .lineTooLong: "the line is too long"
            case .numberRange: "is a number outside its range"
            }
        }

        /// A number outside its field's range (a badge); time_to_live has its own code.
        case numberRange
    }

    /// Which rule was broken.
    public var code: Code
    /// Dotted path of the offending field; `""` when the line is not a JSON object.
    public var field: String
    /// The rule in words, phrased to follow the field name: "must be …", "is …".
    public var rule: String
    /// The offending value, JSON-rendered and at most 80 characters; nil when there is nothing to show.
    public var value: String?

    /// Creates an error. `value` must already be rendered; use `ValidationError.render(_:)`.
    public init(code: Code, field: String, rule: String, value: String? = nil) {
        self.code = code
        self.field = field
        self.rule = rule
        self.value = value
    }

    /// `field: rule (got value)`; without the field prefix when the field is empty.
    public var description: String {
        var text = field.isEmpty ? rule : "\(field): \(rule)"
        if let value { text += " (got \(value))" }
        return text
    }

    /// The error as a log line may carry it: `field: summary`, e.g. `notification.color: must be a color in the
    /// form #rrggbb`, with the summary fixed per `code` (`Code.logSummary`).
    ///
    /// Values may be registration tokens or message content (data, notification text), and rule texts may
    /// quote values too (a v1 conflict quotes the other field's value), so the log rendering takes neither:
    /// only the field path, whose components longer than `maximumLoggedFieldComponent` characters (a key
    /// that could be a token) are shortened with `shortenedToken(_:)`. The precise error is in the event.
    public var logDescription: String {
        guard !field.isEmpty else { return code.logSummary }
        return "\(Self.logSafeField(field)): \(code.logSummary)"
    }

    /// Longest field-path component that logs show as written; FCM's own field names are far shorter.
    public static let maximumLoggedFieldComponent = 40

    /// `field` for logs: each over-long component shortened (`shortenedToken(_:)`), and every component
    /// below a `data` object (an app's own keys, which are message content) replaced by its length, e.g.
    /// `data.…(17)` and `message.android.data.…(5)`. Protocol field names stay as written.
    public static func logSafeField(_ field: String) -> String {
        let components = field.split(separator: ".", omittingEmptySubsequences: false)
        guard field.utf8.count > maximumLoggedFieldComponent || components.dropLast().contains("data") else { return field }
        var underData = false
        return components.map { component in
            defer { if component == "data" { underData = true } }
            if underData { return "…(\(component.count))" }
            return component.count > maximumLoggedFieldComponent ? shortenedToken(String(component)) : String(component)
        }.joined(separator: ".")
    }

    /// The longest rendering of a value in an error, in characters.
    public static let maximumValueLength = 80

    /// Renders `value` as compact JSON, cut to `maximumValueLength` characters with a trailing "…".
    public static func render(_ value: JSONValue) -> String {
        switch value {
        case .string(let s) where s.utf8.count > maximumValueLength:
            // Do not serialize a long payload only to throw most of it away.
            var out = ""
            JSONValue.writeString(String(s.prefix(maximumValueLength)), to: &out)
            return truncate(out)
        default:
            return truncate(value.serialized())
        }
    }

    /// Renders a `to` value: registration tokens are shortened (see `shortenedToken(_:)`).
    static func renderTarget(_ value: JSONValue) -> String {
        if case .string(let s) = value, !s.hasPrefix("/") {
            var out = ""
            JSONValue.writeString(shortenedToken(s), to: &out)
            return truncate(out)
        }
        return render(value)
    }

    static func truncate(_ text: String) -> String {
        guard text.count > maximumValueLength else { return text }
        return String(text.prefix(maximumValueLength - 1)) + "…"
    }
}

/// Intake validation of the legacy XMPP downstream JSON (ccs-protocol.md §3).
///
/// Rules are checked in a fixed order and the first broken one is reported, so the same input always
/// gives the same error: multicast, unknown fields, target, message_id, options (in `topLevelKeys` order),
/// data, notification, then payload size. Within `data` and `notification` the smallest offending key wins.
extension DownstreamMessage {
    /// The top-level fields of a legacy downstream message, in the order they are checked.
    public static let topLevelKeys: [String] = [
        "to", "condition", "message_id", "collapse_key", "priority", "content_available", "mutable_content",
        "time_to_live", "dry_run", "delivery_receipt_requested", "data", "notification",
    ]
    static let topLevelKeySet = Set(topLevelKeys)

    /// Keys of the legacy `notification` object (Apple, Android and web keys of the FCM legacy references).
    public static let notificationKeys: [String] = [
        "title", "body", "sound", "badge", "click_action", "subtitle", "body_loc_key", "body_loc_args",
        "title_loc_key", "title_loc_args", "android_channel_id", "icon", "tag", "color", "image",
    ]
    static let notificationKeySet = Set(notificationKeys)

    /// An integer `notification.badge` (and v1 `apns.payload.aps.badge`): the count an app icon shows, kept
    /// by APNs and Android in a signed 32-bit integer; ccsd refuses what would not fit rather than let it wrap.
    public static let badgeRange: ClosedRange<Int64> = 0...Int64(Int32.max)
    static let badgeRule = "must be an integer from 0 to 2147483647 (or a string)"

    /// Payload limit (data + notification) for token and device-group targets, in bytes.
    public static let maximumPayloadBytes = 4096
    /// Payload limit for topic and condition targets, in bytes.
    public static let maximumTopicPayloadBytes = 2048

    /// Checks this message against every intake rule, as if it had arrived as its own `jsonValue()`.
    /// - Throws: `ValidationError` naming the field, the rule and the value.
    public func validate() throws(ValidationError) {
        guard case .object(let object) = jsonValue() else { return }
        _ = try DownstreamIntake.validate(object)
    }

    /// The size the payload limits apply to: the UTF-8 byte length of the compact JSON of `data` plus that
    /// of `notification` (each as `{…}`, as ccsd writes them; an absent one counts 0). Not the whole message.
    public var payloadByteCount: Int {
        var count = 0
        if let data {
            count += 2 + max(0, data.count - 1)
            for (key, value) in data {
                count += JSONValue.serializedUTF8Count(ofString: key) + 1 + JSONValue.serializedUTF8Count(ofString: value)
            }
        }
        if let notification { count += JSONValue.object(notification).serializedUTF8Count }
        return count
    }
}

extension DownstreamIntake {
    /// Validates a legacy XMPP downstream JSON object (ccs-protocol.md §3) and builds the model.
    /// - Throws: `ValidationError` for the first broken rule (order: see `DownstreamMessage+Validation.swift`).
    public static func validate(_ object: [String: JSONValue]) throws(ValidationError) -> DownstreamMessage {
        if let ids = object["registration_ids"] {
            throw ValidationError(
                code: .multicast, field: "registration_ids",
                rule: "is not available over XMPP: multicast is HTTP only; send one message per token",
                value: ids.arrayValue.map { "\($0.count) tokens" } ?? ValidationError.render(ids))
        }
        try checkUnknownKeys(object)

        let target = try validateTarget(object)
        var message = DownstreamMessage(target: target)

        if let value = object["message_id"] {
            guard case .string(let id) = value else {
                throw typeError("message_id", "must be a non-empty string", value)
            }
            guard !id.isEmpty else {
                throw ValidationError(code: .messageID, field: "message_id", rule: "must be a non-empty string", value: "\"\"")
            }
            // The message_id is also the stanza's id attribute (ccs-protocol.md §2), and XML 1.0 §2.2 cannot
            // carry C0 control characters: refuse them rather than send an id CCS would echo back altered.
            guard !hasControlCharacter(id) else {
                throw ValidationError(code: .messageID, field: "message_id",
                                      rule: "must not contain control characters (U+0000-U+001F, U+007F)", value: ValidationError.render(value))
            }
            message.messageID = id
        }
        if let value = object["collapse_key"] {
            guard case .string(let key) = value else { throw typeError("collapse_key", "must be a string", value) }
            message.collapseKey = key
        }
        if let value = object["priority"] {
            guard case .string(let text) = value, let priority = DownstreamMessage.Priority(rawValue: text) else {
                throw ValidationError(
                    code: .priority, field: "priority", rule: "must be one of \"normal\", \"high\"",
                    value: ValidationError.render(value))
            }
            message.priority = priority
        }
        message.contentAvailable = try boolean(object, "content_available")
        message.mutableContent = try boolean(object, "mutable_content")
        if let value = object["time_to_live"] {
            // An integer JSON number; 600.0 is the same number and is accepted, "600" and 600.5 are not. An
            // integer beyond Int64 is a `.number` (never wrapped) and is out of range like any other.
            let seconds: Int64?
            switch value {
            case .int, .double, .number: seconds = value.intValue
            default: seconds = nil
            }
            guard let seconds, seconds >= 0, seconds <= Int64(DownstreamMessage.maximumTimeToLive) else {
                throw ValidationError(
                    code: .timeToLive, field: "time_to_live",
                    rule: "must be an integer number of seconds from 0 to 2419200", value: ValidationError.render(value))
            }
            message.timeToLive = Int(seconds)
        }
        message.dryRun = try boolean(object, "dry_run")
        message.deliveryReceiptRequested = try boolean(object, "delivery_receipt_requested")

        if let value = object["data"] { message.data = try validateData(value) }
        if let value = object["notification"] { message.notification = try validateNotification(value) }

        let size = message.payloadByteCount
        let limit = message.isTopicOrCondition ? DownstreamMessage.maximumTopicPayloadBytes : DownstreamMessage.maximumPayloadBytes
        if size > limit {
            let kind = message.isTopicOrCondition ? "for a topic or condition target " : ""
            throw ValidationError(
                code: .payloadSize, field: message.data != nil ? "data" : "notification",
                rule: "data + notification must be at most \(limit) bytes of JSON \(kind)(UTF-8, compact)",
                value: "\(size) bytes")
        }
        return message
    }

    // MARK: Rules

    static func checkUnknownKeys(_ object: [String: JSONValue]) throws(ValidationError) {
        var unknown: String?
        for key in object.keys where !DownstreamMessage.topLevelKeySet.contains(key) {
            if unknown == nil || key < unknown! { unknown = key }
        }
        guard let unknown else { return }
        throw ValidationError(
            code: .unknownField, field: unknown,
            rule: EditDistance.unknownFieldRule(unknown, among: DownstreamMessage.topLevelKeys))
    }

    static func validateTarget(_ object: [String: JSONValue]) throws(ValidationError) -> DownstreamMessage.Target {
        try validateTarget(to: object["to"], condition: object["condition"])
    }

    /// The target rule on the values of `to` and `condition` (nil when absent).
    static func validateTarget(to: JSONValue?, condition: JSONValue?) throws(ValidationError) -> DownstreamMessage.Target {
        switch (to, condition) {
        case (let to?, nil):
            guard case .string(let text) = to else {
                throw typeError("to", "must be a string: a registration token, a notification key or /topics/NAME", to)
            }
            if text.hasPrefix("/topics/") {
                let name = text.dropFirst("/topics/".count)
                guard TopicName.isValid(name) else {
                    throw ValidationError(code: .topicName, field: "to", rule: TopicName.rule, value: ValidationError.render(to))
                }
                return .topic(String(name))
            }
            if let problem = RegistrationToken.problem(text) {
                throw ValidationError(code: .targetSyntax, field: "to", rule: problem, value: ValidationError.renderTarget(to))
            }
            return .token(text)
        case (nil, let condition?):
            guard case .string(let text) = condition else { throw typeError("condition", "must be a string", condition) }
            try Condition.check(text, field: "condition")
            return .condition(text)
        default:
            throw ValidationError(
                code: .targetCount, field: "to",
                rule: "a message needs exactly one of 'to' or 'condition'" + (to == nil ? ", and has neither" : ", and has both"))
        }
    }

    /// True when `text` holds a C0 control character or DEL (U+0000-U+001F, U+007F), which a message_id
    /// must not: checked on the UTF-8 bytes, where no byte of a longer sequence is below 0x80.
    static func hasControlCharacter(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { hasControlCharacter(UnsafeRawBufferPointer($0)) }
    }

    static func hasControlCharacter(_ utf8: UnsafeRawBufferPointer) -> Bool {
        utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    static func boolean(_ object: [String: JSONValue], _ key: String) throws(ValidationError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let b) = value else { throw typeError(key, "must be a JSON boolean (true or false)", value) }
        return b
    }

    static func typeError(_ field: String, _ rule: String, _ value: JSONValue) -> ValidationError {
        ValidationError(
            code: .type, field: field, rule: rule,
            value: field == "to" ? ValidationError.renderTarget(value) : ValidationError.render(value))
    }

    /// `data`: an object of string values; keys not `from`, `message_type`, nor starting with `google` or `gcm`
    /// (case-sensitive, as in the FCM reference).
    static func validateData(_ value: JSONValue) throws(ValidationError) -> [String: String] {
        guard case .object(let object) = value else {
            throw typeError("data", "must be an object of string keys to string values", value)
        }
        var data: [String: String] = [:]
        data.reserveCapacity(object.count)
        var worst: (key: String, error: ValidationError)?
        for (key, element) in object {
            if isReservedDataKey(key) {
                if worst == nil || key < worst!.key {
                    worst = (key, ValidationError(
                        code: .reservedDataKey, field: "data." + key,
                        rule: "is a reserved data key (from, message_type, and keys starting with google or gcm)"))
                }
            } else if case .string(let s) = element {
                data[key] = s
            } else if worst == nil || key < worst!.key {
                worst = (key, ValidationError(
                    code: .dataValue, field: "data." + key, rule: "must be a string: data values are strings",
                    value: ValidationError.render(element)))
            }
        }
        if let worst { throw worst.error }
        return data
    }

    static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// `isReservedDataKey(_:)` for a key of ASCII bytes (the only keys the common-shape reader takes), without
    /// a `String`: for ASCII text, `==` and `hasPrefix` compare bytes. `ReservedDataKeyTests` checks that the
    /// two agree.
    static func isReservedDataKey(ascii key: UnsafeBufferPointer<UInt8>) -> Bool {
        func starts(with prefix: StaticString) -> Bool {
            guard key.count >= prefix.utf8CodeUnitCount else { return false }
            for index in 0..<prefix.utf8CodeUnitCount where key[index] != prefix.utf8Start[index] { return false }
            return true
        }
        func equals(_ name: StaticString) -> Bool { key.count == name.utf8CodeUnitCount && starts(with: name) }
        return equals("from") || equals("message_type") || starts(with: "google") || starts(with: "gcm")
    }

    /// `notification`: known keys only; string values, except `*_loc_args` (array of strings, or a string
    /// holding a JSON array of strings) and `badge` (string or integer); `color` is `#rrggbb`.
    static func validateNotification(_ value: JSONValue) throws(ValidationError) -> [String: JSONValue] {
        guard case .object(let object) = value else { throw typeError("notification", "must be an object", value) }
        var worst: (key: String, error: ValidationError)?
        for (key, element) in object {
            if let error = notificationError(key, element), worst == nil || key < worst!.key {
                worst = (key, error)
            }
        }
        if let worst { throw worst.error }
        return object
    }

    static func notificationError(_ key: String, _ value: JSONValue) -> ValidationError? {
        let field = "notification." + key
        switch key {
        case "body_loc_args", "title_loc_args":
            return isLocArgs(value) ? nil : ValidationError(
                code: .locArgs, field: field,
                rule: "must be an array of strings, or a string holding a JSON array of strings",
                value: ValidationError.render(value))
        case "badge":
            switch value {
            case .string: return nil
            case .int(let count) where DownstreamMessage.badgeRange.contains(count): return nil
            case .int, .number:
                return ValidationError(code: .numberRange, field: field, rule: DownstreamMessage.badgeRule, value: ValidationError.render(value))
            default: return typeError(field, "must be a string (or an integer)", value)
            }
        case "color":
            guard case .string(let s) = value else { return typeError(field, "must be a string #rrggbb", value) }
            return isColor(s) ? nil : ValidationError(
                code: .color, field: field, rule: "must be a color in the form #rrggbb", value: ValidationError.render(value))
        case _ where DownstreamMessage.notificationKeySet.contains(key):
            if case .string = value { return nil }
            return typeError(field, "must be a string", value)
        default:
            return ValidationError(
                code: .unknownField, field: field,
                rule: EditDistance.unknownFieldRule(key, among: DownstreamMessage.notificationKeys))
        }
    }

    static func isLocArgs(_ value: JSONValue) -> Bool {
        switch value {
        case .array(let elements):
            return elements.allSatisfy { if case .string = $0 { true } else { false } }
        case .string(let text):
            guard let inner = try? JSONValue.parse(text), case .array = inner else { return false }
            return isLocArgs(inner)
        default:
            return false
        }
    }

    static func isColor(_ s: String) -> Bool {
        let bytes = s.utf8
        guard bytes.count == 7, bytes.first == UInt8(ascii: "#") else { return false }
        return bytes.dropFirst().allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
        }
    }
}

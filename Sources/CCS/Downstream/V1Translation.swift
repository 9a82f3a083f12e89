import FoundationEssentials

/// Translation of FCM's HTTP v1 message shape to the legacy XMPP JSON (ccs-protocol.md §3).
///
/// Every v1 field is either translated to its legacy equivalent or refused with an error naming its v1 path;
/// nothing is dropped. The table, the precedence and the decisions are in docs/v1-mapping.md. In short:
/// - Platform blocks collapse into the one legacy message. A platform `notification` value overrides the
///   common `message.notification` value (and then reaches every platform, as legacy has one notification);
///   two platforms giving the same legacy key different values is a `.conflict` error.
/// - Options (priority, time_to_live, collapse_key, mutable_content, content_available) set by more than one
///   platform must agree; `apns-expiration` agrees with a relative TTL when within 60 seconds of it.
/// - The translated legacy message is then validated by the legacy rules; errors name the v1 path the
///   offending legacy field came from.
extension DownstreamIntake {
    /// Translates the object inside `{"message": {…}}` and validates the result.
    /// - Parameter now: the clock reading `apns-expiration` (UNIX epoch seconds) is measured from.
    /// - Throws: `ValidationError` with a v1 path (`message.android.ttl`), or `message` for the target rule.
    public static func translateV1(_ message: [String: JSONValue], now: Date) throws(ValidationError) -> DownstreamMessage {
        var translator = V1Translator(now: now)
        try translator.translateMessage(message)
        return try translator.finish()
    }

    /// The whole v1 request body: `{"message": {…}, "validate_only": bool}`; `validate_only` → `dry_run`.
    static func translateV1Request(_ request: [String: JSONValue], now: Date) throws(ValidationError) -> DownstreamMessage {
        try V1Translator.checkKeys(request, at: "", supported: ["message", "validate_only"])
        guard case .object(let body)? = request["message"] else {
            throw V1Translator.typeError("message", "must be an object (FCM v1 Message)", request["message"] ?? .null)
        }
        var translator = V1Translator(now: now)
        if let value = request["validate_only"] {
            guard case .bool = value else { throw V1Translator.typeError("validate_only", "must be a JSON boolean", value) }
            try translator.setOption("dry_run", value, from: "validate_only")
        }
        try translator.translateMessage(body)
        return try translator.finish()
    }
}

/// Accumulates the legacy object while walking a v1 message, remembering which v1 path set each legacy field.
struct V1Translator {
    let now: Date
    /// The legacy object being built (without `notification`, kept apart below).
    var legacy: [String: JSONValue] = [:]
    /// Legacy notification keys to values.
    var notification: [String: JSONValue] = [:]
    /// Notification keys whose value came from the common `message.notification` (a platform may override).
    var commonNotificationKeys: Set<String> = []
    /// Legacy field path (`time_to_live`, `notification.color`, `data`) → v1 path that set it.
    var origins: [String: String] = [:]
    /// time_to_live derived from `apns-expiration`, applied in `finish()`.
    var apnsTimeToLive: (seconds: Int, path: String, header: JSONValue)?

    /// How far apart `apns-expiration` and a relative TTL (android.ttl, webpush TTL) may be and still agree.
    static let expirationTolerance = 60

    init(now: Date) { self.now = now }

    // MARK: message

    mutating func translateMessage(_ message: [String: JSONValue]) throws(ValidationError) {
        try Self.checkKeys(
            message, at: "message",
            supported: ["token", "topic", "condition", "data", "notification", "android", "apns", "webpush"],
            unsupported: ["name", "fcm_options"])

        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1, let targetKey = targets.first, let target = message[targetKey] else {
            throw ValidationError(
                code: .targetCount, field: "message",
                rule: "must have exactly one of token, topic or condition" + (targets.isEmpty ? ", and has none" : ", and has \(targets.joined(separator: " and "))"))
        }
        let path = "message." + targetKey
        guard case .string(let text) = target else { throw Self.typeError(path, "must be a string", target) }
        switch targetKey {
        case "token":
            guard !text.hasPrefix("/") else {
                throw ValidationError(code: .targetSyntax, field: path, rule: "must be a registration token; use message.topic for topics", value: ValidationError.render(target))
            }
            legacy["to"] = target
            origins["to"] = path
        case "topic":
            guard !text.hasPrefix("/topics/") else {
                throw ValidationError(code: .topicName, field: path, rule: "must be the topic name without the /topics/ prefix", value: ValidationError.render(target))
            }
            legacy["to"] = .string("/topics/" + text)
            origins["to"] = path
        default:
            legacy["condition"] = target
            origins["condition"] = path
        }

        if let data = message["data"] {
            legacy["data"] = data
            origins["data"] = "message.data"
        }
        if let value = message["notification"] {
            let object = try Self.object(value, at: "message.notification")
            try Self.checkKeys(object, at: "message.notification", supported: ["title", "body", "image"])
            for (key, element) in object {
                try setNotification(key, element, from: "message.notification." + key, common: true)
            }
        }
        if let value = message["android"] { try translateAndroid(try Self.object(value, at: "message.android")) }
        if let value = message["apns"] { try translateAPNs(try Self.object(value, at: "message.apns")) }
        if let value = message["webpush"] { try translateWebpush(try Self.object(value, at: "message.webpush")) }
    }

    // MARK: android

    static let androidNotificationKeys: [String: String] = [
        "title": "title", "body": "body", "icon": "icon", "color": "color", "sound": "sound", "tag": "tag",
        "click_action": "click_action", "body_loc_key": "body_loc_key", "body_loc_args": "body_loc_args",
        "title_loc_key": "title_loc_key", "title_loc_args": "title_loc_args", "channel_id": "android_channel_id",
        "image": "image",
    ]

    mutating func translateAndroid(_ android: [String: JSONValue]) throws(ValidationError) {
        let base = "message.android"
        try Self.checkKeys(
            android, at: base, supported: ["collapse_key", "priority", "ttl", "notification"],
            unsupported: ["restricted_package_name", "data", "fcm_options", "direct_boot_ok",
                          "bandwidth_constrained_ok", "restricted_satellite_ok"])
        if let value = android["collapse_key"] {
            guard case .string = value else { throw Self.typeError(base + ".collapse_key", "must be a string", value) }
            try setOption("collapse_key", value, from: base + ".collapse_key")
        }
        if let value = android["priority"] {
            let priority: String
            switch value {
            case .string("NORMAL"): priority = "normal"
            case .string("HIGH"): priority = "high"
            default:
                throw ValidationError(code: .priority, field: base + ".priority", rule: "must be \"NORMAL\" or \"HIGH\"", value: ValidationError.render(value))
            }
            try setOption("priority", .string(priority), from: base + ".priority")
        }
        if let value = android["ttl"] {
            let seconds = try Self.durationSeconds(value, at: base + ".ttl")
            try setOption("time_to_live", .int(seconds), from: base + ".ttl")
        }
        if let value = android["notification"] {
            let path = base + ".notification"
            let object = try Self.object(value, at: path)
            try Self.checkKeys(
                object, at: path, supported: Array(Self.androidNotificationKeys.keys).sorted(),
                unsupported: ["ticker", "sticky", "event_time", "local_only", "notification_priority", "default_sound",
                              "default_vibrate_timings", "default_light_settings", "vibrate_timings", "visibility",
                              "notification_count", "light_settings", "bypass_proxy_notification", "proxy"])
            for (key, element) in object {
                try setNotification(Self.androidNotificationKeys[key]!, element, from: path + "." + key, common: false)
            }
        }
    }

    // MARK: apns

    static let apsAlertKeys: [String: String] = [
        "title": "title", "body": "body", "subtitle": "subtitle", "loc-key": "body_loc_key",
        "loc-args": "body_loc_args", "title-loc-key": "title_loc_key", "title-loc-args": "title_loc_args",
    ]

    mutating func translateAPNs(_ apns: [String: JSONValue]) throws(ValidationError) {
        let base = "message.apns"
        try Self.checkKeys(apns, at: base, supported: ["headers", "payload", "fcm_options"], unsupported: ["live_activity_token"])
        if let value = apns["headers"] {
            let headers = try Self.object(value, at: base + ".headers")
            for (name, header) in headers.sorted(by: { $0.key < $1.key }) {
                let path = base + ".headers." + name
                guard case .string(let text) = header else { throw Self.typeError(path, "must be a string (HTTP header value)", header) }
                switch name.lowercased() {
                case "apns-priority":
                    switch text {
                    case "10": try setOption("priority", .string("high"), from: path)
                    case "5": try setOption("priority", .string("normal"), from: path)
                    default:
                        throw ValidationError(code: .priority, field: path, rule: "must be \"10\" (high) or \"5\" (normal); other APNs priorities have no legacy equivalent", value: ValidationError.render(header))
                    }
                case "apns-collapse-id":
                    try setOption("collapse_key", header, from: path)
                case "apns-expiration":
                    guard Self.isDigits(text) else {
                        throw ValidationError(code: .v1Format, field: path, rule: "must be UNIX epoch seconds as a decimal string", value: ValidationError.render(header))
                    }
                    let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
                    // More digits than Int64 holds is a time far beyond the 4-week limit, not a format error.
                    guard let expiration = Int64(text) else {
                        throw ValidationError(code: .timeToLive, field: path, rule: "must be at most 2419200 seconds (4 weeks) from now (now is \(nowSeconds))", value: ValidationError.render(header))
                    }
                    let seconds: Int64
                    if expiration == 0 {
                        seconds = 0  // APNs: deliver once, do not store = legacy "now or never".
                    } else {
                        guard expiration >= nowSeconds else {
                            throw ValidationError(code: .v1Format, field: path, rule: "is in the past (now is \(nowSeconds))", value: ValidationError.render(header))
                        }
                        seconds = expiration - nowSeconds
                    }
                    guard seconds <= Int64(DownstreamMessage.maximumTimeToLive) else {
                        throw ValidationError(code: .timeToLive, field: path, rule: "must be at most 2419200 seconds (4 weeks) from now; it is \(seconds) seconds away", value: ValidationError.render(header))
                    }
                    apnsTimeToLive = (Int(seconds), path, header)
                default:
                    throw Self.noEquivalent(path, "this APNs header has no legacy XMPP equivalent")
                }
            }
        }
        if let value = apns["payload"] {
            let payload = try Self.object(value, at: base + ".payload")
            if let bad = payload.keys.filter({ $0 != "aps" }).min() {
                throw Self.noEquivalent(base + ".payload." + bad, "custom APNs payload keys have no legacy XMPP equivalent; put them in message.data")
            }
            if let aps = payload["aps"] { try translateAPS(try Self.object(aps, at: base + ".payload.aps")) }
        }
        if let value = apns["fcm_options"] {
            let path = base + ".fcm_options"
            let options = try Self.object(value, at: path)
            try Self.checkKeys(options, at: path, supported: ["image"], unsupported: ["analytics_label"])
            if let image = options["image"] { try setNotification("image", image, from: path + ".image", common: false) }
        }
    }

    mutating func translateAPS(_ aps: [String: JSONValue]) throws(ValidationError) {
        let base = "message.apns.payload.aps"
        try Self.checkKeys(
            aps, at: base,
            supported: ["alert", "badge", "sound", "category", "mutable-content", "content-available"],
            unsupported: ["thread-id", "interruption-level", "relevance-score", "target-content-id", "filter-criteria",
                          "stale-date", "content-state", "timestamp", "event", "dismissal-date", "attributes-type",
                          "attributes", "input-push-channel", "input-push-token"])
        if let value = aps["alert"] {
            let path = base + ".alert"
            switch value {
            case .string: try setNotification("body", value, from: path, common: false)
            case .object(let alert):
                try Self.checkKeys(
                    alert, at: path, supported: Array(Self.apsAlertKeys.keys).sorted(),
                    unsupported: ["launch-image", "subtitle-loc-key", "subtitle-loc-args", "action-loc-key", "action"])
                for (key, element) in alert {
                    try setNotification(Self.apsAlertKeys[key]!, element, from: path + "." + key, common: false)
                }
            default: throw Self.typeError(path, "must be a string or an object", value)
            }
        }
        if let value = aps["badge"] {
            // Legacy `badge` is a string (FCM legacy reference); APNs badge is a number.
            let badge: Int64
            switch value {
            case .int(let count) where DownstreamMessage.badgeRange.contains(count): badge = count
            case .int, .number:
                throw ValidationError(code: .numberRange, field: base + ".badge", rule: "must be an integer from 0 to 2147483647", value: ValidationError.render(value))
            default:
                throw Self.typeError(base + ".badge", "must be a non-negative integer", value)
            }
            try setNotification("badge", .string(String(badge)), from: base + ".badge", common: false)
        }
        if let value = aps["sound"] {
            guard case .string = value else {
                throw Self.noEquivalent(base + ".sound", "only a sound name (string) has a legacy equivalent; critical-alert sound dictionaries do not")
            }
            try setNotification("sound", value, from: base + ".sound", common: false)
        }
        if let value = aps["category"] {
            try setNotification("click_action", value, from: base + ".category", common: false)
        }
        for (apsKey, legacyKey) in [("mutable-content", "mutable_content"), ("content-available", "content_available")] {
            guard let value = aps[apsKey] else { continue }
            switch value {
            case .int(1): try setOption(legacyKey, .bool(true), from: base + "." + apsKey)
            case .int(0): try setOption(legacyKey, .bool(false), from: base + "." + apsKey)
            default:
                throw ValidationError(code: .v1Format, field: base + "." + apsKey, rule: "must be the number 1 or 0", value: ValidationError.render(value))
            }
        }
    }

    // MARK: webpush

    mutating func translateWebpush(_ webpush: [String: JSONValue]) throws(ValidationError) {
        let base = "message.webpush"
        try Self.checkKeys(webpush, at: base, supported: ["headers", "notification", "fcm_options"], unsupported: ["data"])
        if let value = webpush["headers"] {
            let headers = try Self.object(value, at: base + ".headers")
            for (name, header) in headers.sorted(by: { $0.key < $1.key }) {
                let path = base + ".headers." + name
                guard case .string(let text) = header else { throw Self.typeError(path, "must be a string (HTTP header value)", header) }
                switch name.lowercased() {
                case "ttl":
                    guard Self.isDigits(text) else {
                        throw ValidationError(code: .v1Format, field: path, rule: "must be a whole number of seconds as a decimal string", value: ValidationError.render(header))
                    }
                    guard let seconds = Int64(text), seconds <= Int64(DownstreamMessage.maximumTimeToLive) else {
                        throw ValidationError(code: .timeToLive, field: path, rule: "must be a whole number of seconds from 0 to 2419200 (4 weeks)", value: ValidationError.render(header))
                    }
                    try setOption("time_to_live", .int(seconds), from: path)
                case "image":
                    // FCM's own "send an image" example puts the image URL here.
                    try setNotification("image", header, from: path, common: false)
                default:
                    throw Self.noEquivalent(path, "this Web Push header has no legacy XMPP equivalent")
                }
            }
        }
        if let value = webpush["notification"] {
            let path = base + ".notification"
            let object = try Self.object(value, at: path)
            if let bad = object.keys.filter({ !["title", "body", "icon", "image"].contains($0) }).min() {
                throw Self.noEquivalent(path + "." + bad, "only title, body, icon and image of a web notification have legacy equivalents")
            }
            for (key, element) in object { try setNotification(key, element, from: path + "." + key, common: false) }
        }
        if let value = webpush["fcm_options"] {
            let path = base + ".fcm_options"
            let options = try Self.object(value, at: path)
            try Self.checkKeys(options, at: path, supported: ["link"], unsupported: ["analytics_label"])
            if let link = options["link"] {
                // Legacy web push used notification.click_action for the URL to open (HTTPS required).
                guard case .string(let url) = link, url.lowercased().hasPrefix("https://") else {
                    throw ValidationError(code: .v1Format, field: path + ".link", rule: "must be an https:// URL", value: ValidationError.render(link))
                }
                try setNotification("click_action", link, from: path + ".link", common: false)
            }
        }
    }

    // MARK: Collapsing

    /// Sets a legacy option; a second, different value from another v1 field is a conflict.
    mutating func setOption(_ key: String, _ value: JSONValue, from path: String) throws(ValidationError) {
        if let existing = legacy[key], existing != value {
            throw Self.conflict(path, value, with: origins[key] ?? key, existing, legacyField: key)
        }
        if legacy[key] == nil {
            legacy[key] = value
            origins[key] = path
        }
    }

    /// Sets a legacy notification key. A platform value overrides a common one; two platforms that disagree conflict.
    mutating func setNotification(_ key: String, _ value: JSONValue, from path: String, common: Bool) throws(ValidationError) {
        let field = "notification." + key
        if let existing = notification[key], !common {
            if commonNotificationKeys.contains(key) {
                commonNotificationKeys.remove(key)
            } else if existing != value {
                throw Self.conflict(path, value, with: origins[field] ?? field, existing, legacyField: field)
            } else {
                return
            }
        }
        notification[key] = value
        origins[field] = path
        if common { commonNotificationKeys.insert(key) }
    }

    /// Applies `apns-expiration`, builds the legacy object and validates it, reporting v1 paths.
    mutating func finish() throws(ValidationError) -> DownstreamMessage {
        if let apns = apnsTimeToLive {
            if case .int(let relative)? = legacy["time_to_live"] {
                if abs(relative - Int64(apns.seconds)) > Int64(Self.expirationTolerance) {
                    throw ValidationError(
                        code: .conflict, field: apns.path,
                        rule: "conflicts with \(origins["time_to_live"] ?? "time_to_live") (\(relative) seconds): it is \(apns.seconds) seconds from now, and legacy XMPP has one time_to_live for all platforms",
                        value: ValidationError.render(apns.header))
                }
            } else {
                legacy["time_to_live"] = .int(Int64(apns.seconds))
                origins["time_to_live"] = apns.path
            }
        }
        if !notification.isEmpty { legacy["notification"] = .object(notification) }
        do {
            return try DownstreamIntake.validate(legacy)
        } catch {
            var error = error
            error.field = v1Path(forLegacyField: error.field)
            throw error
        }
    }

    /// The v1 path a legacy error field came from (`data.k` → `message.data.k`).
    func v1Path(forLegacyField field: String) -> String {
        if let origin = origins[field] { return origin }
        if field.hasPrefix("data.") { return "message.data." + field.dropFirst("data.".count) }
        if field == "notification" { return "message.notification" }
        return field
    }

    // MARK: Helpers

    static func object(_ value: JSONValue, at path: String) throws(ValidationError) -> [String: JSONValue] {
        guard case .object(let object) = value else { throw typeError(path, "must be an object", value) }
        return object
    }

    /// A google.protobuf.Duration in JSON: decimal seconds with an "s" suffix ("86400s", "3.5s").
    /// Fractions are rounded down to whole seconds (legacy time_to_live is integer seconds, and a TTL is an
    /// upper bound: rounding down never keeps a message longer than asked).
    static func durationSeconds(_ value: JSONValue, at path: String) throws(ValidationError) -> Int64 {
        let rule = "must be a duration in seconds with an \"s\" suffix, such as \"86400s\" or \"3.5s\""
        guard case .string(let text) = value, text.hasSuffix("s") else {
            throw ValidationError(code: .v1Format, field: path, rule: rule, value: ValidationError.render(value))
        }
        let number = text.dropLast()
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, isDigits(whole), parts.count == 1 || (isDigits(parts[1]) && parts[1].count <= 9) else {
            throw ValidationError(code: .v1Format, field: path, rule: rule, value: ValidationError.render(value))
        }
        // A well-formed duration past 4 weeks is a range error, whatever its number of digits (never parsed
        // into a wrapped or truncated integer).
        guard let seconds = Int64(whole), seconds <= Int64(DownstreamMessage.maximumTimeToLive) else {
            throw ValidationError(code: .timeToLive, field: path, rule: "must be a duration from 0s to 2419200s (4 weeks)", value: ValidationError.render(value))
        }
        return seconds
    }

    /// True when `text` is one or more ASCII digits (no sign, no spaces).
    static func isDigits(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// Refuses keys not in `supported`: `.noLegacyEquivalent` for known v1 fields in `unsupported`, else
    /// `.unknownField` with a suggestion. The smallest offending key is reported.
    static func checkKeys(_ object: [String: JSONValue], at path: String, supported: [String], unsupported: [String] = []) throws(ValidationError) {
        var bad: String?
        for key in object.keys where !supported.contains(key) {
            if bad == nil || key < bad! { bad = key }
        }
        guard let bad else { return }
        let field = path.isEmpty ? bad : path + "." + bad
        if unsupported.contains(bad) {
            throw noEquivalent(field, "has no legacy XMPP equivalent; ccsd refuses it rather than drop it")
        }
        throw ValidationError(code: .unknownField, field: field, rule: EditDistance.unknownFieldRule(bad, among: supported + unsupported))
    }

    static func noEquivalent(_ field: String, _ rule: String) -> ValidationError {
        ValidationError(code: .noLegacyEquivalent, field: field, rule: rule)
    }

    static func typeError(_ field: String, _ rule: String, _ value: JSONValue) -> ValidationError {
        ValidationError(code: .type, field: field, rule: rule, value: ValidationError.render(value))
    }

    static func conflict(_ path: String, _ value: JSONValue, with otherPath: String, _ other: JSONValue, legacyField: String) -> ValidationError {
        ValidationError(
            code: .conflict, field: path,
            rule: "conflicts with \(otherPath) (\(ValidationError.render(other))): both set legacy \(legacyField), and legacy XMPP has one value for all platforms",
            value: ValidationError.render(value))
    }
}

import FoundationEssentials

/// A downstream message in the legacy XMPP JSON shape of ccs-protocol.md §3 (the FCM XMPP server reference).
///
/// Build one with `DownstreamIntake` (which validates) or directly and then call `validate()`.
/// Optional fields are `nil` when absent; an explicit value, including `timeToLive == 0` ("now or never"),
/// is kept and written back. `messageID` may be nil: the daemon assigns one before sending.
public struct DownstreamMessage: Sendable, Equatable {
    /// Who receives the message: exactly one of `to` or `condition` on the wire.
    public enum Target: Sendable, Equatable {
        /// `to`: a registration token or a device-group notification key.
        case token(String)
        /// `to: "/topics/NAME"`; holds NAME, without the `/topics/` prefix.
        case topic(String)
        /// `condition`: `'A' in topics && ('B' in topics || 'C' in topics)`, at most two operators.
        case condition(String)

        /// True for topic and condition targets, which have the 2048-byte payload limit.
        var isTopicOrCondition: Bool {
            if case .token = self { return false }
            return true
        }
    }

    /// `priority`: `normal` or `high`.
    public enum Priority: String, Sendable, Equatable, CaseIterable {
        case normal
        case high
    }

    /// The 4-week default of `time_to_live`, in seconds, and its maximum.
    public static let maximumTimeToLive = 2_419_200

    // Stored properties are declared in this order so that the struct packs into 113 bytes (the one-byte
    // fields in the target's tail, `timeToLive` last, `EncodedJSON` without an optional range), and a
    // `CCSDaemon.IntakeItem` holding one into 128: values of up to 128 bytes are copied by inline moves,
    // larger ones by a call to `memmove`, and a message is copied about ten times between its line and its
    // record. `ValueLayoutTests` keeps the sizes.
    public var target: Target { didSet { dropEncoded() } }
    /// `priority`.
    public var priority: Priority? { didSet { dropEncoded() } }
    /// `content_available` (APNs content-available).
    public var contentAvailable: Bool? { didSet { dropEncoded() } }
    /// `mutable_content` (APNs mutable-content).
    public var mutableContent: Bool? { didSet { dropEncoded() } }
    /// `dry_run`.
    public var dryRun: Bool? { didSet { dropEncoded() } }
    /// `delivery_receipt_requested`.
    public var deliveryReceiptRequested: Bool? { didSet { dropEncoded() } }
    /// `message_id`: non-empty, unique per sender ID, reused unchanged on resend; nil until assigned.
    public var messageID: String? {
        get { storedMessageID }
        set {
            storedMessageID = newValue
            dropEncoded()
        }
    }
    private var storedMessageID: String?
    /// `collapse_key`.
    public var collapseKey: String? { didSet { dropEncoded() } }
    /// `data`: string keys to string values.
    public var data: [String: String]? {
        get { encoded?.dataRange != nil ? encoded!.data() : storedData }
        set {
            storedData = newValue
            encoded = nil
        }
    }
    /// `data` unless it is still only in `encoded` (`EncodedJSON.dataRange`), read from there when asked for.
    private var storedData: [String: String]?
    /// `notification`, exactly as written: string values, `*_loc_args` as an array of strings or a string
    /// holding one, `badge` as a string or integer. Keys: see `DownstreamMessage.notificationKeys`.
    public var notification: [String: JSONValue]? { didSet { dropEncoded() } }
    /// `jsonUTF8()` as intake wrote it from the line (`DownstreamIntake.parseCommonShape`), with `data` only
    /// there until asked for; dropped (`data` read out first) when any field changes. Never part of equality.
    var encoded: EncodedJSON?
    /// `time_to_live` in seconds, 0…2419200; nil = absent (CCS default 4 weeks); 0 is explicit.
    public var timeToLive: Int? { didSet { dropEncoded() } }

    /// Forgets `encoded`, keeping `data` when it was only there.
    private mutating func dropEncoded() {
        guard let encoded else { return }
        if encoded.dataRange != nil { storedData = encoded.data() }
        self.encoded = nil
    }

    /// Equal when every field is (`data` compared as read, wherever it is kept).
    public static func == (lhs: DownstreamMessage, rhs: DownstreamMessage) -> Bool {
        lhs.target == rhs.target && lhs.messageID == rhs.messageID && lhs.collapseKey == rhs.collapseKey
            && lhs.priority == rhs.priority && lhs.contentAvailable == rhs.contentAvailable
            && lhs.mutableContent == rhs.mutableContent && lhs.timeToLive == rhs.timeToLive && lhs.dryRun == rhs.dryRun
            && lhs.deliveryReceiptRequested == rhs.deliveryReceiptRequested && lhs.data == rhs.data
            && lhs.notification == rhs.notification
    }

    /// A copy with `message_id` set (the daemon assigns one when the app gave none).
    public func withMessageID(_ messageID: String) -> DownstreamMessage {
        var copy = self
        if self.messageID == nil, let encoded {
            copy.storedMessageID = messageID  // the text stays, with the message_id written in
            copy.encoded = encoded.inserting(messageID: messageID)
        } else {
            copy.messageID = messageID
        }
        return copy
    }

    /// The effective time_to_live in seconds: the explicit value, or the 2419200 (4 weeks) default.
    public var effectiveTimeToLive: Int { timeToLive ?? Self.maximumTimeToLive }

    /// The key that RATE_EXCEEDED backoff is kept per (ccs-protocol.md §4): the token, `/topics/NAME`,
    /// or the condition text.
    public var targetKey: String {
        switch target {
        case .token(let token): token
        case .topic(let name): "/topics/" + name
        case .condition(let condition): condition
        }
    }

    /// True for topic and condition targets, which have the 2048-byte payload limit.
    public var isTopicOrCondition: Bool { target.isTopicOrCondition }
}

extension DownstreamMessage {
    public init(
        target: Target,
        messageID: String? = nil,
        collapseKey: String? = nil,
        priority: Priority? = nil,
        contentAvailable: Bool? = nil,
        mutableContent: Bool? = nil,
        timeToLive: Int? = nil,
        dryRun: Bool? = nil,
        deliveryReceiptRequested: Bool? = nil,
        data: [String: String]? = nil,
        notification: [String: JSONValue]? = nil
    ) {
        self.init(target: target, messageID: messageID, collapseKey: collapseKey, priority: priority,
                  contentAvailable: contentAvailable, mutableContent: mutableContent, timeToLive: timeToLive,
                  dryRun: dryRun, deliveryReceiptRequested: deliveryReceiptRequested, data: data,
                  notification: notification, encoded: nil)
    }

    /// The one initializer that sets the stored fields. Intake's shortcut (`DownstreamIntake.parseCommonShape`)
    /// passes the JSON text it wrote (`encoded`, with `data` only there), so the message is made in one piece:
    /// setting `encoded` on a finished message copied the whole message once more.
    init(target: Target, messageID: String?, collapseKey: String?, priority: Priority?, contentAvailable: Bool?,
         mutableContent: Bool?, timeToLive: Int?, dryRun: Bool?, deliveryReceiptRequested: Bool?,
         data: [String: String]? = nil, notification: [String: JSONValue]? = nil, encoded: EncodedJSON?) {
        // The synthesized memberwise initializer (these initializers are in an extension so that it exists):
        // an initializer of a struct this size that assigns its fields one by one built the value, copied it
        // and destroyed the first (measured: about 350 instructions per intake line).
        self.init(target: target, priority: priority, contentAvailable: contentAvailable, mutableContent: mutableContent,
                  dryRun: dryRun, deliveryReceiptRequested: deliveryReceiptRequested, storedMessageID: messageID,
                  collapseKey: collapseKey, storedData: data, notification: notification, encoded: encoded,
                  timeToLive: timeToLive)
    }
}

// MARK: - Encoding

extension DownstreamMessage {
    /// The legacy XMPP JSON object (ccs-protocol.md §3), with `message_id` when set.
    /// Keeps an explicit `time_to_live` of 0.
    public func jsonValue() -> JSONValue {
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(12)
        switch target {
        case .token(let token): object["to"] = .string(token)
        case .topic(let name): object["to"] = .string("/topics/" + name)
        case .condition(let condition): object["condition"] = .string(condition)
        }
        if let messageID { object["message_id"] = .string(messageID) }
        if let collapseKey { object["collapse_key"] = .string(collapseKey) }
        if let priority { object["priority"] = .string(priority.rawValue) }
        if let contentAvailable { object["content_available"] = .bool(contentAvailable) }
        if let mutableContent { object["mutable_content"] = .bool(mutableContent) }
        if let timeToLive { object["time_to_live"] = .int(Int64(timeToLive)) }
        if let dryRun { object["dry_run"] = .bool(dryRun) }
        if let deliveryReceiptRequested { object["delivery_receipt_requested"] = .bool(deliveryReceiptRequested) }
        if let data { object["data"] = .object(data.mapValues { .string($0) }) }
        if let notification { object["notification"] = .object(notification) }
        return .object(object)
    }

    /// The legacy XMPP JSON as compact text, written directly (no intermediate `JSONValue`).
    /// Members come in a fixed order (target, message_id, options, data, notification); keys inside
    /// `data` and `notification` are sorted, so equal messages give equal text. Not XML-escaped.
    public func jsonString() -> String { String(decoding: jsonUTF8(), as: UTF8.self) }

    /// `jsonString()` as UTF-8 bytes, written straight into a byte buffer (no `String` growth).
    public func jsonUTF8() -> [UInt8] {
        if let encoded { return encoded.bytes }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        JSONValue.append("{", to: &out)
        switch target {
        case .token(let token):
            JSONValue.append("\"to\":", to: &out)
            JSONValue.writeString(token, to: &out)
        case .topic(let name):
            JSONValue.append("\"to\":", to: &out)
            JSONValue.writeString("/topics/" + name, to: &out)
        case .condition(let condition):
            JSONValue.append("\"condition\":", to: &out)
            JSONValue.writeString(condition, to: &out)
        }
        if let messageID {
            JSONValue.append(",\"message_id\":", to: &out)
            JSONValue.writeString(messageID, to: &out)
        }
        if let collapseKey {
            JSONValue.append(",\"collapse_key\":", to: &out)
            JSONValue.writeString(collapseKey, to: &out)
        }
        if let priority {
            JSONValue.append(",\"priority\":\"", to: &out)
            out.append(contentsOf: priority.rawValue.utf8)
            JSONValue.append("\"", to: &out)
        }
        if let contentAvailable { contentAvailable ? JSONValue.append(",\"content_available\":true", to: &out) : JSONValue.append(",\"content_available\":false", to: &out) }
        if let mutableContent { mutableContent ? JSONValue.append(",\"mutable_content\":true", to: &out) : JSONValue.append(",\"mutable_content\":false", to: &out) }
        if let timeToLive {
            JSONValue.append(",\"time_to_live\":", to: &out)
            JSONValue.append(Int64(timeToLive), to: &out)
        }
        if let dryRun { dryRun ? JSONValue.append(",\"dry_run\":true", to: &out) : JSONValue.append(",\"dry_run\":false", to: &out) }
        if let deliveryReceiptRequested {
            deliveryReceiptRequested ? JSONValue.append(",\"delivery_receipt_requested\":true", to: &out) : JSONValue.append(",\"delivery_receipt_requested\":false", to: &out)
        }
        if let data {
            JSONValue.append(",\"data\":{", to: &out)
            var first = true
            for (key, value) in data.sorted(by: { $0.key < $1.key }) {  // sorted pairs: no lookup per key
                if !first { JSONValue.append(",", to: &out) }
                first = false
                JSONValue.writeString(key, to: &out)
                JSONValue.append(":", to: &out)
                JSONValue.writeString(value, to: &out)
            }
            JSONValue.append("}", to: &out)
        }
        if let notification {
            JSONValue.append(",\"notification\":", to: &out)
            JSONValue.object(notification).write(to: &out)
        }
        JSONValue.append("}", to: &out)
        return out
    }
}

/// The compact JSON of a message (`DownstreamMessage.jsonUTF8()`), kept with the message when intake wrote it
/// straight from the line's tokens, so that it is written once.
struct EncodedJSON: Sendable {
    /// The text, exactly as `jsonUTF8()` writes it from the fields.
    var bytes: [UInt8]
    /// Where `,"message_id":…` goes (just after the target member) when the message has no message_id.
    var messageIDOffset: Int
    /// Where the `data` object is in `bytes` (`{…}`) while the message keeps `data` only here; nil when the
    /// message has no `data` or keeps it in its field.
    var dataRange: Range<Int>? {
        get { dataStart < 0 ? nil : dataStart..<dataEnd }
        set {
            dataStart = newValue?.lowerBound ?? -1
            dataEnd = newValue?.upperBound ?? -1
        }
    }
    /// `dataRange` as two offsets, -1 for none: 16 bytes where an optional range takes 17 and pads the
    /// message (see `DownstreamMessage.target`).
    private var dataStart: Int
    private var dataEnd: Int

    init(bytes: [UInt8], messageIDOffset: Int, dataRange: Range<Int>?) {
        self.bytes = bytes
        self.messageIDOffset = messageIDOffset
        dataStart = dataRange?.lowerBound ?? -1
        dataEnd = dataRange?.upperBound ?? -1
    }

    /// The `data` object at `dataRange`, read back (keys and values as written by `JSONValue.writeString`).
    func data() -> [String: String]? {
        guard let dataRange else { return nil }
        guard case .object(let object)? = try? JSONValue.parse(Data(bytes[dataRange])) else {
            preconditionFailure("the data ccsd wrote does not read back")
        }
        return object.mapValues { value in
            guard case .string(let text) = value else { preconditionFailure("a data value ccsd wrote is not a string") }
            return text
        }
    }

    /// The text with `messageID` as the message's message_id, where `jsonUTF8()` writes it; for a message
    /// that had none.
    func inserting(messageID: String) -> EncodedJSON {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + messageID.utf8.count + 16)
        bytes.withUnsafeBufferPointer { text in
            out.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<messageIDOffset]))
            JSONValue.append(",\"message_id\":", to: &out)
            JSONValue.writeString(messageID, to: &out)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: text[messageIDOffset...]))
        }
        let shift = out.count - bytes.count
        return EncodedJSON(bytes: out, messageIDOffset: messageIDOffset,
                           dataRange: dataRange.map { $0.lowerBound + shift..<$0.upperBound + shift })
    }
}

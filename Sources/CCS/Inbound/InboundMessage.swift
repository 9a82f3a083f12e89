import FoundationEssentials
import XMLStream

/// One CCS message received on a connection, classified by its JSON `message_type` (ccs-protocol.md §2–3).
///
/// Kept small (`ValueLayoutTests`): an ack is copied some twenty times between the stream parser and the
/// dispatcher, and a value of more than 128 bytes is copied by a call to `memmove` where a smaller one is moved
/// inline. So the rare large shapes (receipts, upstream messages, stanza errors) are `indirect`, and an ack's or
/// nack's device-group counts are one reference wide (`GroupOutcome` keeps its fields in a shared box).
public enum InboundMessage: Sendable, Equatable {
    /// A downstream message was accepted (§3). Device-group acks carry the member counts.
    case ack(Ack)
    /// A downstream message was rejected (§3–4).
    case nack(Nack)
    /// A delivery receipt; ACK it with its full `dr2:` message_id (§3).
    indirect case receipt(Receipt)
    /// A control message (§5): `.connectionDraining` today. It has no message_id.
    case control(controlType: ControlType)
    /// An upstream message from a device (no message_type); ACK it on the same connection (§3).
    indirect case upstream(Upstream)
    /// `<message type="error">`: CCS could not read a downstream message at all (§3).
    indirect case stanzaError(StanzaError)
    /// A message_type ccsd does not know: logged and counted, never fatal (§2).
    case unknown(messageType: String, messageID: String?)

    public struct Ack: Sendable, Equatable {
        public var messageID: String
        /// The `from` of the ack: the token, notification key or topic the message went to.
        public var from: String?
        /// The canonical registration token, when CCS says the token has changed.
        public var canonicalRegistrationID: String?
        /// Device-group acks: members reached, members failed, and the tokens that failed, as written.
        public var group: GroupOutcome?

        public init(messageID: String, from: String? = nil, canonicalRegistrationID: String? = nil, group: GroupOutcome?) {
            self.messageID = messageID
            self.from = from
            self.canonicalRegistrationID = canonicalRegistrationID
            self.group = group
        }

        /// With counts that fit the usual types (tests, fixtures); no group when all three are nil.
        public init(messageID: String, from: String? = nil, canonicalRegistrationID: String? = nil, success: Int? = nil, failure: Int? = nil, failedRegistrationIDs: [String]? = nil) {
            self.init(messageID: messageID, from: from, canonicalRegistrationID: canonicalRegistrationID,
                      group: InboundMessage.group(success, failure, failedRegistrationIDs))
        }
    }

    public struct Nack: Sendable, Equatable {
        public var messageID: String
        public var from: String?
        /// The CCS error code, e.g. `.badRegistration` (§4).
        public var error: CCSErrorCode
        public var errorDescription: String?
        /// Device-group nacks (every member failed, or a retryable error), as written.
        public var group: GroupOutcome?

        public init(messageID: String, from: String? = nil, error: CCSErrorCode, errorDescription: String? = nil, group: GroupOutcome?) {
            self.messageID = messageID
            self.from = from
            self.error = error
            self.errorDescription = errorDescription.map(shorteningTokens(in:))
            self.group = group
        }

        /// With counts that fit the usual types (tests, fixtures); no group when all three are nil.
        public init(messageID: String, from: String? = nil, error: CCSErrorCode, errorDescription: String? = nil, success: Int? = nil, failure: Int? = nil, failedRegistrationIDs: [String]? = nil) {
            self.init(messageID: messageID, from: from, error: error, errorDescription: errorDescription,
                      group: InboundMessage.group(success, failure, failedRegistrationIDs))
        }
    }

    public struct Receipt: Sendable, Equatable {
        /// The receipt's own id, `dr2:` + the original message_id.
        public var messageID: String
        /// The receipt's `from` (normally `gcm.googleapis.com`): the ACK goes `to` it.
        public var from: String
        public var originalMessageID: String?
        public var status: String?
        public var deviceRegistrationID: String?
        public var category: String?
        /// Set when ccsd could not decode the whole receipt but recovered its message_id: what failed.
        public var decodeError: String?
        /// The `gcm` text as received, when `decodeError` is set.
        public var raw: String?
        /// The message_id's JSON literal as written, when it held unpaired surrogate escapes (`messageID`
        /// then has U+FFFD for them): the ACK echoes it, and dedupe tells such ids apart by it.
        public var messageIDLiteral: String?

        public init(messageID: String, from: String, originalMessageID: String? = nil, status: String? = nil, deviceRegistrationID: String? = nil, category: String? = nil,
                    decodeError: String? = nil, raw: String? = nil, messageIDLiteral: String? = nil) {
            self.messageIDLiteral = messageIDLiteral
            self.messageID = messageID
            self.from = from
            self.originalMessageID = originalMessageID
            self.status = status
            self.deviceRegistrationID = deviceRegistrationID
            self.category = category
            self.decodeError = decodeError
            self.raw = raw
        }
    }

    public struct Upstream: Sendable, Equatable {
        public var messageID: String
        /// The device's registration token.
        public var from: String
        public var category: String?
        /// The `data` object exactly as received (string values, XML entities already resolved); `null` when
        /// the payload could not be decoded (see `decodeError`).
        public var data: JSONValue
        public var timeToLive: Int64?
        /// Set when ccsd could not decode the whole message but recovered its message_id and from: what
        /// failed, e.g. `data.n: number 1e400 is beyond the range of a 64-bit float; read as null`.
        public var decodeError: String?
        /// The `gcm` text as received, when `decodeError` is set.
        public var raw: String?
        /// The message_id's JSON literal as written, when it held unpaired surrogate escapes (`messageID`
        /// then has U+FFFD for them): the ACK echoes it, and dedupe tells such ids apart by it.
        public var messageIDLiteral: String?

        public init(messageID: String, from: String, category: String? = nil, data: JSONValue, timeToLive: Int64? = nil,
                    decodeError: String? = nil, raw: String? = nil, messageIDLiteral: String? = nil) {
            self.messageIDLiteral = messageIDLiteral
            self.messageID = messageID
            self.from = from
            self.category = category
            self.data = data
            self.timeToLive = timeToLive
            self.decodeError = decodeError
            self.raw = raw
        }
    }

    /// A stanza error (RFC 6120 §8.3) about a stanza ccsd sent: a downstream message or an ACK.
    public struct StanzaError: Sendable, Equatable {
        /// The stanza `id` attribute, as ccsd set it: the message_id on a downstream stanza,
        /// `CCSStanza.ackIDPrefix` + the upstream message_id on an ACK.
        public var id: String?
        /// A message_id found in the echoed JSON, if any (downstream and upstream share this space).
        public var messageID: String?
        /// The `message_type` of the echoed JSON, if any: `ack` when the error is about an ACK.
        public var echoedMessageType: String?
        /// The RFC 6120 §8.3 condition, e.g. `bad-request`.
        public var condition: String
        public var code: String?
        public var text: String?

        /// True when the error is about an ACK ccsd sent rather than a downstream message: its `id` is in
        /// the ACK id space, or the echoed payload is an ack. Such an error resolves no downstream message.
        public var isAboutAck: Bool {
            // Compared as bytes: `hasPrefix` compares characters, and a message_id starting with a combining
            // mark merges with the prefix's `:` into one character.
            id?.utf8.starts(with: CCSStanza.ackIDPrefix.utf8) == true || echoedMessageType == "ack"
        }

        /// The downstream message_id this error may resolve (when it is in flight on the connection the
        /// error came on): the `id` attribute ccsd set; without one, the message_id of an echoed downstream
        /// payload (one without `message_type`). nil when the error is about an ACK or names nothing.
        public var resolvedMessageID: String? {
            if isAboutAck { return nil }
            if let id { return id }
            return echoedMessageType == nil ? messageID : nil
        }

        public init(id: String?, messageID: String?, condition: String, code: String? = nil, text: String? = nil,
                    echoedMessageType: String? = nil) {
            self.id = id
            self.messageID = messageID
            self.condition = condition
            self.code = code
            self.text = text
            self.echoedMessageType = echoedMessageType
        }
    }
}

/// Why an inbound stanza could not be read as a CCS message. Never fatal to the connection.
///
/// Thrown only for what nothing could be recovered from: no message_id (or, for an upstream message, no
/// `from`; for a control message, no control_type), or an unknown message_type in a text that is not JSON.
public struct InboundParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var rule: String
    /// The message_id, when one could be recovered (for logging each unreadable message once).
    public var messageID: String?
    /// FNV-1a 64 of the `gcm` text: tells unreadable messages without a message_id apart.
    public var payloadDigest: UInt64 = 0
    public var description: String { "\(field): \(rule)" }
}

extension InboundMessage {
    /// Classifies a `<message>` stanza (ccs-protocol.md §2).
    ///
    /// Returns `nil` for stanzas that are not CCS payloads (no `gcm` child in `google:mobile:data`
    /// and not an error). Matching is by namespace URI and local name, so any prefix works.
    /// - Throws: `InboundParseError` when the `gcm` text is not a JSON object or lacks a field the type needs.
    public static func parse(stanza: XMLElement) throws(InboundParseError) -> InboundMessage? {
        guard stanza.name == "message" else { return nil }
        let gcm = stanza.child("gcm", namespace: XMLNamespace.gcm)
        if stanza.attribute("type") == "error" {
            return .stanzaError(parseStanzaError(stanza, gcm: gcm))
        }
        guard let gcm else { return nil }
        return try classifyReportingDigest(gcm.text.trimmingXMLWhitespace(), nil)
    }

    /// Classifies the text of a `<message>`'s `gcm` child as `parse(stanza:)` does for a stanza without
    /// `type="error"` that has one: the same result and errors, read from the bytes as given (the XML stream
    /// parser's payload, `XMLPayloadShape.ccs`), without an `XMLElement` and, for an ack or nack, without a
    /// `String` of the whole text.
    /// - Throws: `InboundParseError` as `parse(stanza:)`.
    public static func parse(payload bytes: UnsafeRawBufferPointer) throws(InboundParseError) -> InboundMessage {
        // Text with XML whitespace at either end is trimmed by `trimmingXMLWhitespace` (by characters), as
        // `parse(stanza:)` does; the usual payload has none and is read as it is.
        if bytes.isEmpty || XMLWhitespace.mayTrim(bytes) {
            return try classifyReportingDigest(String(decoding: bytes, as: UTF8.self).trimmingXMLWhitespace(), nil)
        }
        let readBytes = read(bytes)
        if case .message(let message)? = readBytes { return message }
        // Bytes the door read are UTF-8, so the text has exactly these bytes and its read is `readBytes`.
        return try classifyReportingDigest(String(decoding: bytes, as: UTF8.self), readBytes)
    }

    /// `classify` with the payload digest on its error (as `parse(stanza:)`); `known` is the text's `read`
    /// when already done (nil: read it here).
    private static func classifyReportingDigest(_ text: String, _ known: Read?) throws(InboundParseError) -> InboundMessage {
        do {
            return try classify(text, known ?? read(text))
        } catch {
            var error = error
            error.payloadDigest = fnv1a(text)
            throw error
        }
    }

    /// Classifies `text`, whose `read(text)` is `readResult`.
    private static func classify(_ text: String, _ readResult: Read?) throws(InboundParseError) -> InboundMessage {
        var readObject: [String: JSONValue]?
        switch readResult {
        case .message(let message)?: return message
        case .object(let object)?: readObject = object
        case nil: break
        }
        // Lone surrogate escapes read as U+FFFD (JSONValue.parse); a number no Double holds reads as null and
        // is named in decode_error; a text refused otherwise is handed over raw when its
        // message_id (and from) can be recovered, so that it is ACKed once instead of redelivered forever.
        let object: [String: JSONValue]
        var problems: [String] = []
        do {
            if let readObject { object = readObject } else { object = try parseJSONObject(text) }
        } catch {
            guard error.rule != "the payload is " + JSONNesting.rule,  // no second try: it is as deep
                  let lenient = try? JSONValue.parseReplacingUnrepresentableNumbers(Data(text.utf8)),
                  !lenient.replaced.isEmpty, let recovered = lenient.value.objectValue else {
                return try recover(text, error)
            }
            object = recovered
            problems = lenient.replaced.map {
                "\($0.dottedPath ?? "a number in an array"): number \($0.text) is beyond the range of a 64-bit float; read as null"
            }
        }
        let literal = messageIDLiteral(object["message_id"]?.stringValue, in: text)
        if let literal { problems.insert(literalProblem(literal), at: 0) }

        /// An upstream message (no message_type, or one that is not a string): needs message_id and from.
        func upstream() throws(InboundParseError) -> InboundMessage {
            let messageID = try string(object, "message_id", messageID: nil)
            let from = try string(object, "from", messageID: messageID)
            let decodeError = problems.isEmpty ? nil : problems.joined(separator: "; ")
            return .upstream(Upstream(
                messageID: messageID, from: from,
                category: object["category"]?.stringValue,
                data: object["data"] ?? .object([:]),
                timeToLive: object["time_to_live"]?.intValue,
                decodeError: decodeError, raw: decodeError == nil ? nil : text, messageIDLiteral: literal))
        }

        switch object["message_type"] {
        case nil:
            return try upstream()
        case .string("ack")?:
            return .ack(Ack(
                messageID: try string(object, "message_id"),
                from: object["from"]?.stringValue,
                canonicalRegistrationID: object["registration_id"]?.stringValue,
                group: group(object, in: text)))
        case .string("nack")?:
            return .nack(Nack(
                messageID: try string(object, "message_id"),
                from: object["from"]?.stringValue,
                error: object["error"]?.stringValue.map(CCSErrorCode.init(rawValue:)) ?? .unknown,
                errorDescription: object["error_description"]?.stringValue,
                group: group(object, in: text)))
        case .string("receipt")?:
            let data = object["data"]?.objectValue ?? [:]
            let decodeError = problems.isEmpty ? nil : problems.joined(separator: "; ")
            return .receipt(Receipt(
                messageID: try string(object, "message_id"),
                from: object["from"]?.stringValue ?? "gcm.googleapis.com",
                originalMessageID: data["original_message_id"]?.stringValue,
                status: data["message_status"]?.stringValue,
                deviceRegistrationID: data["device_registration_id"]?.stringValue,
                category: object["category"]?.stringValue,
                decodeError: decodeError, raw: decodeError == nil ? nil : text, messageIDLiteral: literal))
        case .string("control")?:
            return .control(controlType: ControlType(rawValue: object["control_type"]?.stringValue ?? ""))
        case .string(let other)?:
            return .unknown(messageType: other, messageID: object["message_id"]?.stringValue)
        case let value?:
            // Not a string: it cannot be an ack or nack ccsd could trust (it would resolve a downstream message
            // on a guess), so it is read as an upstream message, named in decode_error, handed over and ACKed.
            let problem = nonStringMessageType(JSONTokenScan.firstToken(at: ["message_type"], in: Array(text.utf8)), value)
            problems.append(problem)
            do {
                return try upstream()
            } catch {
                throw InboundParseError(field: "message_type", rule: problem.dropFirst("message_type: ".count)
                    + "; read as an upstream message, which needs \(error.description)", messageID: error.messageID)
            }
        }
    }

    private enum Read {
        case message(InboundMessage)
        case object([String: JSONValue])
    }

    /// One parse through `JSONFrontDoor.withObject`: an ack or nack without device-group members (the common
    /// reply) is read member by member, without a dictionary of the whole payload; any other object comes
    /// back whole for `classify`'s general path. nil when the door declines the text (`classify` then parses
    /// it as before); the result is the same either way.
    private static func read(_ text: String) -> Read? {
        var text = text
        return text.withUTF8 { read(UnsafeRawBufferPointer($0)) }
    }

    /// `read(_:)` over the text's UTF-8 bytes.
    private static func read(_ bytes: UnsafeRawBufferPointer) -> Read? {
        JSONFrontDoor.withObject(utf8: bytes) { (object: borrowing JSONFrontDoor.ObjectView) -> Read? in
            // The type compared as bytes: no `String` of it is needed. (Keys and values are `StaticString`s,
            // read in place.)
            let messageType: StaticString = "message_type", messageIDKey: StaticString = "message_id"
            let isAck = object.string(messageType, is: "ack" as StaticString)
            guard isAck || object.string(messageType, is: "nack" as StaticString),
                  let messageID = object.string(messageIDKey), !messageID.isEmpty else { return object.dictionary().map(Read.object) }
            // Members found so far (keys are distinct): once they are all of the object's members, the others
            // are absent without a lookup each (the usual ack is message_type, message_id and from alone).
            var found = 2
            let from = member("from", of: object, found: &found)
            if isAck {
                let canonicalRegistrationID = member("registration_id", of: object, found: &found)
                guard found == object.count || !hasGroupMembers(object) else { return object.dictionary().map(Read.object) }
                return .message(.ack(Ack(messageID: messageID, from: from, canonicalRegistrationID: canonicalRegistrationID, group: nil)))
            }
            let error = member("error", of: object, found: &found)
            let errorDescription = member("error_description", of: object, found: &found)
            guard found == object.count || !hasGroupMembers(object) else { return object.dictionary().map(Read.object) }
            return .message(.nack(Nack(messageID: messageID, from: from, error: error.map(CCSErrorCode.init(rawValue:)) ?? .unknown,
                                       errorDescription: errorDescription, group: nil)))
        }
    }

    /// The string member `key`, looked up only while some member is not yet found (`found` of them are).
    private static func member(_ key: StaticString, of object: borrowing JSONFrontDoor.ObjectView, found: inout Int) -> String? {
        guard found < object.count, let value = object.string(key) else { return nil }
        found += 1
        return value
    }

    /// True when an ack or nack has device-group members (read by `classify`'s general path).
    private static func hasGroupMembers(_ object: borrowing JSONFrontDoor.ObjectView) -> Bool {
        object.contains("success" as StaticString) || object.contains("failure" as StaticString)
            || object.contains("failed_registration_ids" as StaticString)
    }

    /// The message_id's JSON literal when `messageID` (as decoded) may hide unpaired surrogates (it has
    /// U+FFFD) and the literal written has them; nil otherwise.
    private static func messageIDLiteral(_ messageID: String?, in text: String) -> String? {
        guard let messageID, messageID.unicodeScalars.contains("\u{FFFD}") else { return nil }
        return JSONTokenScan.unpairedSurrogateLiteral("message_id", in: Array(text.utf8))
    }

    private static func literalProblem(_ literal: String) -> String {
        "message_id: holds unpaired UTF-16 surrogate escapes, read as U+FFFD; written \(literal) (the ACK echoes it)"
    }

    /// `message_type: must be a string (got null)`: the value as written (`5`, `true`), or `an array` / `an object`.
    private static func nonStringMessageType(_ token: JSONTokenScan.Token?, _ value: JSONValue?) -> String {
        let written: String
        switch token?.kind {
        case .container?: written = token?.text == "[" ? "an array" : "an object"
        case .number?, .literal?: written = token!.text
        default:
            switch value {
            case .array?: written = "an array"
            case .object?: written = "an object"
            case let scalar?: written = scalar.serialized()
            case nil: written = "a value that is not a string"
            }
        }
        return "message_type: must be a string (got \(written))"
    }

    /// The device-group members of an ack or nack as written (`GroupOutcome`); nil when it has none. Numbers
    /// take their text from the token scan, so `18446744073709551617`, `-0` and `1E2` stay as written.
    private static func group(_ object: [String: JSONValue], in text: String) -> GroupOutcome? {
        let keys = ["success", "failure", "failed_registration_ids"]
        guard keys.contains(where: { object[$0] != nil }) else { return nil }
        let bytes = Array(text.utf8)
        var problems: [String] = []
        func asWritten(_ value: JSONValue, _ token: JSONTokenScan.Token?, _ name: String) -> JSONValue {
            guard let token, token.kind == .number, JSONValue.isNumberText(token.text) else { return value }
            guard let double = Double(token.text), double.isFinite else {
                problems.append("\(name): number \(token.text) is beyond the range of a 64-bit float; read as null")
                return .null
            }
            if let integer = Int64(token.text), String(integer) == token.text { return .int(integer) }
            return .number(token.text)
        }
        func member(_ key: String) -> JSONValue? {
            object[key].map { asWritten($0, JSONTokenScan.firstToken(at: [key], in: bytes), key) }
        }
        var failed = object["failed_registration_ids"]
        if case .array(let elements)? = failed {
            // The array's own elements are the tokens with exactly this path (containers included), in order.
            var tokens: [JSONTokenScan.Token] = []
            JSONTokenScan.scan(bytes) { token in
                if token.path.count == 2, token.path[0] == "failed_registration_ids", token.path[1] == nil { tokens.append(token) }
                return true
            }
            if tokens.count == elements.count {
                failed = .array(zip(elements, tokens).enumerated().map { index, pair in
                    asWritten(pair.0, pair.1, "failed_registration_ids[\(index)]")
                })
            }
        }
        let success = member("success")
        let failure = member("failure")
        return GroupOutcome(success: success, failure: failure, failedRegistrationIDs: failed,
                            decodeError: problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// Counts that fit the usual types, as a `GroupOutcome` (tests, fixtures); nil when all are nil.
    static func group(_ success: Int?, _ failure: Int?, _ failed: [String]?) -> GroupOutcome? {
        guard success != nil || failure != nil || failed != nil else { return nil }
        return GroupOutcome(success: success.map { .int(Int64($0)) }, failure: failure.map { .int(Int64($0)) },
                            failedRegistrationIDs: failed.map { .array($0.map(JSONValue.string)) })
    }

    /// Parses the trimmed `gcm` text (the XML parser joined its pieces).
    private static func parseJSONObject(_ text: String) throws(InboundParseError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw InboundParseError(field: "gcm", rule: "the payload is \(error.message)")
        }
        guard let object = value.objectValue else {
            throw InboundParseError(field: "gcm", rule: "the payload is a JSON \(value.typeName), not an object")
        }
        return object
    }

    /// Best effort for a `gcm` text `JSONValue.parse` refuses: the top-level `message_id`, `from` and
    /// `message_type` string members, each found lexically and decoded alone (`JSONTokenScan`). An upstream message (no
    /// message_type, or one that is not a string: see `classify`) needs message_id and from; a receipt needs message_id (its ACK goes to its `from`,
    /// default `gcm.googleapis.com`); an ack or nack needs message_id (a nack's `error` defaults to
    /// `UNKNOWN`, which is retried); a control message needs control_type. Limits: members are found
    /// lexically, so a text broken before them may hide them (a message_type cut off makes an ack look like
    /// an upstream message); unknown message types are not recovered.
    private static func recover(_ text: String, _ error: InboundParseError) throws(InboundParseError) -> InboundMessage {
        let bytes = Array(text.utf8)
        let messageID = JSONTokenScan.topLevelString("message_id", in: bytes).flatMap { $0.isEmpty ? nil : $0 }
        let literal = messageIDLiteral(messageID, in: text)
        let from = JSONTokenScan.topLevelString("from", in: bytes).flatMap { $0.isEmpty ? nil : $0 }
        var problems = ["\(error.field): \(error.rule)"]
        if let literal { problems.insert(literalProblem(literal), at: 0) }
        let messageType: String?
        var typeProblem: String?
        switch JSONTokenScan.firstToken(at: ["message_type"], in: bytes) {
        case nil:
            messageType = nil
        case let token? where token.kind == .string:
            messageType = JSONTokenScan.topLevelString("message_type", in: bytes) ?? token.text
        case let token?:
            // Not a string: read as an upstream message, as in `classify`.
            typeProblem = nonStringMessageType(token, nil)
            problems.append(typeProblem!)
            messageType = nil
        }
        let decodeError = problems.joined(separator: "; ")
        switch messageType {
        case nil:
            guard let messageID, let from else {
                throw InboundParseError(field: typeProblem == nil ? error.field : "message_type",
                                        rule: (typeProblem.map { String($0.dropFirst("message_type: ".count)) + "; " } ?? "")
                                            + error.rule + (messageID == nil ? "; no message_id recovered" : "; no from recovered"),
                                        messageID: messageID)
            }
            return .upstream(Upstream(
                messageID: messageID, from: from, category: JSONTokenScan.topLevelString("category", in: bytes),
                data: .null, decodeError: decodeError, raw: text, messageIDLiteral: literal))
        case "receipt"?:
            guard let messageID else {
                throw InboundParseError(field: error.field, rule: error.rule + "; no message_id recovered", messageID: nil)
            }
            func member(_ keys: [String]) -> String? {
                guard let token = JSONTokenScan.firstToken(at: keys, in: bytes), token.kind == .string else { return nil }
                return try? JSONValue.parse(token.text).stringValue
            }
            return .receipt(Receipt(
                messageID: messageID, from: from ?? "gcm.googleapis.com",
                originalMessageID: member(["data", "original_message_id"]), status: member(["data", "message_status"]),
                deviceRegistrationID: member(["data", "device_registration_id"]),
                category: JSONTokenScan.topLevelString("category", in: bytes), decodeError: decodeError, raw: text,
                messageIDLiteral: literal))
        case "ack"?, "nack"?:
            // Not ACKed, but they resolve a downstream message: without them it would wait for its ack
            // timeout and be resent, to come back unreadable again.
            guard let messageID else {
                throw InboundParseError(field: error.field, rule: error.rule + "; no message_id recovered", messageID: nil)
            }
            if messageType == "ack" { return .ack(Ack(messageID: messageID, from: from)) }
            return .nack(Nack(
                messageID: messageID, from: from, error: JSONTokenScan.topLevelString("error", in: bytes).map(CCSErrorCode.init(rawValue:)) ?? .unknown,
                errorDescription: JSONTokenScan.topLevelString("error_description", in: bytes)))
        case "control"?:
            guard let controlType = JSONTokenScan.topLevelString("control_type", in: bytes) else {
                throw InboundParseError(field: error.field, rule: error.rule + "; no control_type recovered", messageID: nil)
            }
            return .control(controlType: ControlType(rawValue: controlType))
        default:
            throw InboundParseError(field: error.field, rule: error.rule, messageID: messageID)
        }
    }

    private static func string(_ object: [String: JSONValue], _ key: String, messageID: String? = nil) throws(InboundParseError) -> String {
        guard let value = object[key]?.stringValue, !value.isEmpty else {
            throw InboundParseError(field: key, rule: "a non-empty string is required",
                                    messageID: messageID ?? object["message_id"]?.stringValue)
        }
        return value
    }

    /// FNV-1a, 64 bits: a stable digest of a payload (no security role).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }

    private static func parseStanzaError(_ stanza: XMLElement, gcm: XMLElement?) -> StanzaError {
        let error = stanza.children.first { $0.name == "error" }
        let condition = error?.children.first { $0.namespace == XMLNamespace.stanzas && $0.name != "text" }?.name
        let text = error?.child("text", namespace: XMLNamespace.stanzas)?.text
        var echoedID: String?
        var echoedType: String?
        if let gcm, let value = try? JSONValue.parse(gcm.text.trimmingXMLWhitespace()) {
            echoedID = value["message_id"]?.stringValue
            echoedType = value["message_type"].map { $0.stringValue ?? $0.serialized() }
        }
        return StanzaError(
            id: stanza.attribute("id"), messageID: echoedID,
            condition: condition ?? "undefined-condition",
            code: error?.attribute("code"), text: text, echoedMessageType: echoedType)
    }
}

extension InboundMessage.Upstream {
    /// The message_id as ccsd deduplicates and ACKs it (with the literal written, when it had one).
    public var upstreamMessageID: UpstreamMessageID { UpstreamMessageID(text: messageID, literal: messageIDLiteral) }
}

extension InboundMessage.Receipt {
    /// The message_id as ccsd deduplicates and ACKs it (with the literal written, when it had one).
    public var upstreamMessageID: UpstreamMessageID { UpstreamMessageID(text: messageID, literal: messageIDLiteral) }
}

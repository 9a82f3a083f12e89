import CJSONFrontDoor
import FoundationEssentials
import Glibc

/// The common legacy message read in one pass over simdjson's tokens (`JSONFrontDoor.withTokens`), without a
/// `[String: JSONValue]`, its compact JSON (`DownstreamMessage.jsonUTF8()`) written on the way.
///
/// Only a shortcut: it accepts a line only when the full path (`DownstreamIntake.parse(line:now:)`) accepts it
/// with the same message, and declines (nil) anything else, which the full path then reads, so that it stays
/// the one source of every error text. Taken: a top-level object whose keys are known legacy keys, each once,
/// written exactly (ASCII); `to` or `condition` a string that passes the target rule
/// (`DownstreamIntake.validateTarget`); `message_id` a non-empty string without control characters;
/// `collapse_key` and `priority` strings (`normal`, `high`); the four options `true` or `false`;
/// `time_to_live` a plain integer from 0 to 2419200; `data` an object of ASCII keys, none reserved nor
/// repeated, to strings, within the payload limit. Declined: `notification`, the v1 shape, any other number,
/// and every broken rule.
extension DownstreamIntake {
    /// Set by tests only (`commonShapeOffSwitch.withValue(true) { … }`): the shortcut is never taken, so that
    /// the full path can be compared with it. A `TaskFlag`, like `JSONFrontDoor.referenceSwitch`: one
    /// atomic load per line while nobody binds it, not a task-local lookup.
    package static let commonShapeOffSwitch = TaskFlag()
    package static var commonShapeOff: Bool { commonShapeOffSwitch.value }

    /// The message when `utf8` is a valid line of the common shape (see the extension's notes); nil otherwise.
    static func parseCommonShape(_ utf8: UnsafeRawBufferPointer) -> DownstreamMessage? {
        guard !commonShapeOff, !JSONFrontDoor.referenceOnly else { return nil }
        return JSONFrontDoor.withTokens(utf8) { tokens in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: Field.count) { at in
                at.initialize(repeating: 0)
                // The text is written here first and copied once into an array of its exact size (see `Writer`).
                let capacity = Writer.capacity(lineBytes: utf8.count)
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { text in
                    readCommonShape(tokens, at, text: Writer(text.baseAddress!, capacity: capacity))
                }
            }
        }
    }

    /// The top-level members, in `DownstreamMessage.topLevelKeys` order (the order `jsonUTF8()` writes them).
    private enum Field {
        static let to = 0, condition = 1, messageID = 2, collapseKey = 3, priority = 4, contentAvailable = 5,
                   mutableContent = 6, timeToLive = 7, dryRun = 8, deliveryReceiptRequested = 9, data = 10,
                   notification = 11
        static let count = 12

        /// The member a key token names, when it is written exactly as one of the legacy keys.
        static func of(_ key: ccsd_json_token) -> Int? {
            switch key.length {
            case 2: return named(key, "to") ? to : nil
            case 4: return named(key, "data") ? data : nil
            case 7: return named(key, "dry_run") ? dryRun : nil
            case 8: return named(key, "priority") ? priority : nil
            case 9: return named(key, "condition") ? condition : nil
            case 10: return named(key, "message_id") ? messageID : nil
            case 12:
                if named(key, "time_to_live") { return timeToLive }
                if named(key, "collapse_key") { return collapseKey }
                return named(key, "notification") ? notification : nil
            case 15: return named(key, "mutable_content") ? mutableContent : nil
            case 17: return named(key, "content_available") ? contentAvailable : nil
            case 26: return named(key, "delivery_receipt_requested") ? deliveryReceiptRequested : nil
            default: return nil
            }
        }

        private static func named(_ key: ccsd_json_token, _ name: StaticString) -> Bool {
            memcmp(key.text, name.utf8Start, name.utf8CodeUnitCount) == 0
        }
    }

    private static func kind(_ token: ccsd_json_token, _ kind: ccsd_json_kind) -> Bool {
        token.kind == UInt8(kind.rawValue)
    }

    private static func bytes(_ token: ccsd_json_token) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: UnsafeRawPointer(token.text)?.assumingMemoryBound(to: UInt8.self), count: Int(token.length))
    }

    /// The walk itself; `at[field]` is the token index of each member's value (0: absent).
    private static func readCommonShape(_ tokens: UnsafeBufferPointer<ccsd_json_token>, _ at: UnsafeMutableBufferPointer<Int>,
                                        text: Writer) -> DownstreamMessage? {
        guard let top = tokens.first, kind(top, CCSD_JSON_OBJECT) else { return nil }
        var index = 1
        while index < Int(top.end) {
            guard let field = Field.of(tokens[index]), at[field] == 0 else { return nil }  // unknown, or repeated
            at[field] = index + 1
            index = JSONFrontDoor.next(tokens, after: index + 1)
        }
        guard at[Field.notification] == 0 else { return nil }

        func string(_ field: Int) -> String? {
            let token = tokens[at[field]]
            return kind(token, CCSD_JSON_STRING) ? JSONFrontDoor.text(token) : nil
        }
        func flag(_ field: Int) -> Bool?? {
            guard at[field] != 0 else { return .some(nil) }
            let token = tokens[at[field]]
            if kind(token, CCSD_JSON_TRUE) { return true }
            if kind(token, CCSD_JSON_FALSE) { return false }
            return nil
        }

        var out = text
        out.put("{")
        let target: DownstreamMessage.Target
        switch (at[Field.to], at[Field.condition]) {
        case (1..., 0):
            guard let text = string(Field.to),
                  let valid = try? validateTarget(to: .string(text), condition: nil) else { return nil }
            target = valid
            out.put("\"to\":")
            out.putString(bytes(tokens[at[Field.to]]))
        case (0, 1...):
            guard let text = string(Field.condition),
                  let valid = try? validateTarget(to: nil, condition: .string(text)) else { return nil }
            target = valid
            out.put("\"condition\":")
            out.putString(bytes(tokens[at[Field.condition]]))
        default:
            return nil
        }
        // The fields are gathered here and the message made once at the end: setting them one by one on a
        // message runs each property's observer, which copied the whole message twice per line.
        let messageIDOffset = out.count
        var messageID: String?
        var collapseKey: String?
        var priority: DownstreamMessage.Priority?
        var timeToLive: Int?

        if at[Field.messageID] != 0 {
            let token = tokens[at[Field.messageID]]
            guard kind(token, CCSD_JSON_STRING), token.length > 0,
                  !hasControlCharacter(UnsafeRawBufferPointer(bytes(token))) else { return nil }
            messageID = JSONFrontDoor.text(token)
            out.put(",\"message_id\":")
            out.putString(bytes(token))
        }
        if at[Field.collapseKey] != 0 {
            guard let key = string(Field.collapseKey) else { return nil }
            collapseKey = key
            out.put(",\"collapse_key\":")
            out.putString(bytes(tokens[at[Field.collapseKey]]))
        }
        if at[Field.priority] != 0 {
            guard let text = string(Field.priority), let value = DownstreamMessage.Priority(rawValue: text) else { return nil }
            priority = value
            out.put(value == .high ? ",\"priority\":\"high\"" : ",\"priority\":\"normal\"")
        }
        guard case .some(let contentAvailable) = flag(Field.contentAvailable),
              case .some(let mutableContent) = flag(Field.mutableContent) else { return nil }
        if let contentAvailable { out.put(contentAvailable ? ",\"content_available\":true" : ",\"content_available\":false") }
        if let mutableContent { out.put(mutableContent ? ",\"mutable_content\":true" : ",\"mutable_content\":false") }
        if at[Field.timeToLive] != 0 {
            let token = tokens[at[Field.timeToLive]]
            guard kind(token, CCSD_JSON_NUMBER), let seconds = JSONFrontDoor.plainInteger(token),
                  seconds >= 0, seconds <= Int64(DownstreamMessage.maximumTimeToLive) else { return nil }
            timeToLive = Int(seconds)
            out.put(",\"time_to_live\":")
            out.put(bytes(token))
        }
        guard case .some(let dryRun) = flag(Field.dryRun),
              case .some(let deliveryReceiptRequested) = flag(Field.deliveryReceiptRequested) else { return nil }
        if let dryRun { out.put(dryRun ? ",\"dry_run\":true" : ",\"dry_run\":false") }
        if let deliveryReceiptRequested {
            out.put(deliveryReceiptRequested ? ",\"delivery_receipt_requested\":true" : ",\"delivery_receipt_requested\":false")
        }
        var dataRange: Range<Int>?
        if at[Field.data] != 0 {
            out.put(",\"data\":")
            let start = out.count
            guard writeData(tokens, at: at[Field.data], to: &out) else { return nil }
            // What `jsonUTF8()` writes for `data` is at least `payloadByteCount` (it writes U+FFFE and U+FFFF
            // as 6-byte escapes, which count 3): within the limit, the full path's count is too; above it,
            // the full path decides.
            let limit = target.isTopicOrCondition ? DownstreamMessage.maximumTopicPayloadBytes : DownstreamMessage.maximumPayloadBytes
            guard out.count - start <= limit else { return nil }
            dataRange = start..<out.count
        }
        out.put("}")
        // `data` stays in the text (the message reads it from there when asked): no dictionary per message.
        return DownstreamMessage(target: target, messageID: messageID, collapseKey: collapseKey, priority: priority,
                                 contentAvailable: contentAvailable, mutableContent: mutableContent, timeToLive: timeToLive,
                                 dryRun: dryRun, deliveryReceiptRequested: deliveryReceiptRequested,
                                 encoded: EncodedJSON(bytes: out.bytes, messageIDOffset: messageIDOffset, dataRange: dataRange))
    }

    /// Writes `data` at token `at` to `out` with its keys sorted, as `jsonUTF8()` does, when it is an object
    /// of ASCII keys (so that bytes order and compare them as `String` does), none reserved nor repeated, to
    /// strings; false otherwise.
    private static func writeData(_ tokens: UnsafeBufferPointer<ccsd_json_token>, at: Int, to out: inout Writer) -> Bool {
        let object = tokens[at]
        guard kind(object, CCSD_JSON_OBJECT) else { return false }
        let count = (Int(object.end) - at - 1) / 2  // key, string value: other values are declined below
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { keys -> Bool in
            var index = at + 1
            for slot in 0..<count {
                let key = tokens[index]
                guard index + 1 < Int(object.end), kind(tokens[index + 1], CCSD_JSON_STRING) else { return false }
                guard bytes(key).allSatisfy({ $0 < 0x80 }) else { return false }
                keys[slot] = index
                index += 2
            }
            guard index == Int(object.end) else { return false }
            // Insertion sort by key bytes: a handful of keys, no allocation.
            func less(_ a: Int, _ b: Int) -> Bool {
                let x = tokens[a], y = tokens[b]
                let common = Int(min(x.length, y.length))
                let order = common == 0 ? 0 : memcmp(x.text, y.text, common)
                return order < 0 || (order == 0 && x.length < y.length)
            }
            for i in 1..<max(count, 1) {
                let key = keys[i]
                var j = i
                while j > 0, less(key, keys[j - 1]) {
                    keys[j] = keys[j - 1]
                    j -= 1
                }
                keys[j] = key
            }
            out.put("{")
            for slot in 0..<count {
                let key = keys[slot]
                if slot > 0 {
                    guard less(keys[slot - 1], key) else { return false }  // a repeated key: the full path decides
                    out.put(",")
                }
                guard !isReservedDataKey(ascii: bytes(tokens[key])) else { return false }
                out.putString(bytes(tokens[key]))
                out.put(":")
                out.putString(bytes(tokens[key + 1]))
            }
            out.put("}")
            return true
        }
    }

    /// Writes the message's text forward into memory sized for the whole line beforehand, and makes the one
    /// array of its exact size at the end (`bytes`): appending each piece to an array cost about 90
    /// instructions per piece (uniqueness and capacity checks), and a line has about fifteen pieces.
    ///
    /// Room: every piece written stands for a token of the line at least a sixth as long (a string's
    /// escapes take at most six bytes per byte of its text, `JSONValue.maximumStringBytes`; keys, numbers,
    /// literals and punctuation are written as they are in the line), so six times the line and a margin
    /// hold any text the shortcut writes. Checked in debug builds.
    fileprivate struct Writer {
        private let start: UnsafeMutablePointer<UInt8>
        private var at: UnsafeMutablePointer<UInt8>
        private let capacity: Int

        static func capacity(lineBytes: Int) -> Int { 6 * lineBytes + 64 }

        init(_ start: UnsafeMutablePointer<UInt8>, capacity: Int) {
            self.start = start
            at = start
            self.capacity = capacity
        }

        /// Bytes written so far.
        var count: Int { start.distance(to: at) }

        /// What was written, as an array of its size.
        var bytes: [UInt8] { [UInt8](UnsafeBufferPointer(start: start, count: count)) }

        mutating func put(_ text: StaticString) {
            put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }

        /// Bytes as they are (a plain integer's digits are what `jsonUTF8()` writes for it).
        mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
            assert(count + bytes.count <= capacity, "the common shape's text outgrew its room")
            at.initialize(from: bytes.baseAddress!, count: bytes.count)
            at += bytes.count
        }

        /// `text` as a JSON string (`JSONValue.writeString`'s rule).
        mutating func putString(_ text: UnsafeBufferPointer<UInt8>) {
            assert(count + JSONValue.maximumStringBytes(text.count) <= capacity, "the common shape's text outgrew its room")
            at += JSONValue.writeString(utf8: text, at: at)
        }
    }
}

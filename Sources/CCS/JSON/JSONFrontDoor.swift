import CJSONFrontDoor
import Glibc
import Synchronization

/// The one door through which ccsd parses JSON: intake lines, acks, nacks, receipts, upstream and control
/// messages, configuration (ccs-protocol.md §2–3). Backed by Debian's simdjson (its On-Demand API, behind the
/// C interface of the `CJSONFrontDoor` target), chosen by instruction counts (docs/performance.md); when
/// simdjson refuses a text, Debian's jansson says why and where (`JSONValue.ParseError`).
///
/// Every text read is JSON (RFC 8259), with any value at the top level. What ccsd adds to the RFC:
/// - numbers keep their value (`JSONValue.init?(numberText:)`): never wrapped or rounded to another value;
///   one beyond a 64-bit float (`1e400`) refuses the text (`JSONValue.parseReplacingUnrepresentableNumbers`
///   names it);
/// - a key repeated in one object keeps its last value (as Foundation's `JSONSerialization` did);
/// - an unpaired UTF-16 surrogate escape (`"\ud800"`) reads as U+FFFD (`JSONSurrogateRepair`);
/// - a UTF-8 byte-order mark before the text is skipped (RFC 8259 §8.1 allows it); the text must be UTF-8;
/// - nesting deeper than `maxDepth` objects and arrays is refused (`JSONNesting.rule`).
public enum JSONFrontDoor {
    /// Nesting (objects and arrays) beyond this is refused (CCS payloads nest 3 deep).
    public static let maxDepth = 64

    /// Set by tests and `ccsd-bench json-parse` only (`referenceSwitch.withValue(true) { … }`): every parse
    /// goes to `referenceParser` (Foundation's `JSONSerialization`, installed by the test-only
    /// `JSONReference` module: the path ccsd used before this door) and `withObject` declines, so that the
    /// two can be compared. A `TaskFlag`: one atomic load per read while nobody binds it.
    package static let referenceSwitch = TaskFlag()
    package static var referenceOnly: Bool { referenceSwitch.value }
    /// The parser `referenceSwitch` selects; nil until a test installs one (then `parse` ignores the switch).
    package static let referenceParser = Locked<(@Sendable (UnsafeRawBufferPointer) throws(JSONValue.ParseError) -> JSONValue)?>(nil)

    /// Parses one JSON text into a `JSONValue`.
    /// - Throws: `JSONValue.ParseError` when the text is not JSON (its reason and byte offset), or nests
    ///   deeper than `maxDepth`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONValue.ParseError) -> JSONValue {
        if referenceOnly, let reference = referenceParser.withLock({ $0 }) { return try reference(bytes) }
        if let value = parseWithLibrary(bytes) { return value }
        return try parseDeclined(bytes)
    }

    /// `parse` for a text simdjson refused or in which a number was declined (the cold path): one UTF-8
    /// byte-order mark before the text skipped, the nesting bound, a second read with unpaired surrogate
    /// escapes repaired, then the error.
    static func parseDeclined(_ bytes: UnsafeRawBufferPointer) throws(JSONValue.ParseError) -> JSONValue {
        var bytes = bytes
        var skipped = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            bytes = UnsafeRawBufferPointer(rebasing: bytes[3...])
            skipped = 3
            if let value = parseWithLibrary(bytes) { return value }
        }
        if JSONNesting.exceeds(maxDepth, bytes) { throw JSONValue.ParseError(message: JSONNesting.rule) }
        var text = [UInt8](bytes)
        if JSONSurrogateRepair.repair(&text), let value = text.withUnsafeBytes({ parseWithLibrary($0) }) { return value }
        // The repair keeps every byte offset, so the error is true of the text as written.
        throw explain(text, skipped: skipped)
    }

    /// Why simdjson (or a number rule) refused `bytes`, from jansson: the reason without any of the text,
    /// and the byte offset of the token where it breaks (counting the `skipped` bytes before `bytes`).
    static func explain(_ bytes: [UInt8], skipped: Int = 0) -> JSONValue.ParseError {
        // jansson reads an integer as a double (it refuses one beyond 64 bits otherwise), and so overflows on
        // one beyond a double, which ccsd reads as its text: such an integer is shown to it as `0`, padded.
        var text = bytes
        let long = JSONTokenScan.numbers(in: text) { number in
            !number.contains { "eE.".contains($0) } && JSONValue.isNumberText(number) && Double(number).map { !$0.isFinite } ?? false
        }
        if !long.isEmpty { text = JSONTokenScan.replacing(long, with: "0", in: text) }
        var reason = [CChar](repeating: 0, count: 200)
        var offset = 0
        var end = 0
        let kind = text.withUnsafeBytes {
            ccsd_json_explain($0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, &reason, reason.count, &offset, &end)
        }
        let words = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if kind == 1 || (kind == 0 && end == bytes.count && offset < end && isCutShort(bytes[offset..<end]))
            || (kind == 3 && end < bytes.count && isCutCharacter(bytes[end...])) {
            let end = skipped + bytes.count
            return JSONValue.ParseError(message: "not valid JSON: the text ends at byte \(end), before its JSON value is complete",
                                        offset: end, endsEarly: true)
        }
        if kind == -1 {
            // jansson reads a text simdjson refused: simdjson's own reason, with no offset.
            return JSONValue.ParseError(message: "not valid JSON as ccsd reads it: " + bytes.withUnsafeBytes { libraryRefusal($0) })
        }
        if let comma = trailingComma(before: offset, in: bytes) {
            return JSONValue.ParseError(message: "not valid JSON: a trailing comma at byte \(skipped + comma)", offset: skipped + comma)
        }
        return JSONValue.ParseError(message: "not valid JSON: \(words) at byte \(skipped + offset)", offset: skipped + offset)
    }

    /// True when `token`, which runs to the end of the text, is the start of a token cut short: of a literal
    /// (`tr`), of a number (`1.`, `-`, `1e+`), or of a string cut in an escape (`"a\`, `"\u00`).
    static func isCutShort(_ token: ArraySlice<UInt8>) -> Bool {
        for literal in ["true", "false", "null"] where token.count < literal.utf8.count && literal.utf8.starts(with: token) {
            return true
        }
        if let last = token.last, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(last),
           token.allSatisfy(JSONTokenScan.isNumberByte) {
            return true
        }
        guard token.first == UInt8(ascii: "\"") else { return false }
        // An escape cut short: an odd run of backslashes at the end, or one before `u` and at most three hex digits.
        let start = token.startIndex
        var index = token.endIndex
        while index > start + 1, token.endIndex - index < 3, JSONTokenScan.hexDigit(token[index - 1]) != nil { index -= 1 }
        if index > start + 1, token[index - 1] == UInt8(ascii: "u") { index -= 1 } else { index = token.endIndex }
        var backslashes = 0
        while index - backslashes > start + 1, token[index - backslashes - 1] == UInt8(ascii: "\\") { backslashes += 1 }
        return backslashes % 2 == 1
    }

    /// True when `tail`, the bytes from where jansson could not decode UTF-8 to the end of the text, is the start
    /// of one character's UTF-8 bytes: a lead byte and fewer continuation bytes than it announces.
    static func isCutCharacter(_ tail: ArraySlice<UInt8>) -> Bool {
        guard let lead = tail.first, lead >= 0xC2, lead <= 0xF4 else { return false }
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
        return tail.count < length && tail.dropFirst().allSatisfy { $0 & 0xC0 == 0x80 }
    }

    /// The offset of the comma just before `offset` (whitespace between), when the byte at `offset` closes
    /// the array or object that comma is in: RFC 8259 §4–5 allow a comma only between members or elements.
    static func trailingComma(before offset: Int, in bytes: [UInt8]) -> Int? {
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "]") || bytes[offset] == UInt8(ascii: "}") else { return nil }
        var index = offset - 1
        while index >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index -= 1 }
        guard index >= 0, bytes[index] == UInt8(ascii: ",") else { return nil }
        // The innermost bracket open at the comma (a lexical pass: strings skipped by their quotes and escapes).
        var open: [UInt8] = []
        var at = 0
        while at < index {
            switch bytes[at] {
            case UInt8(ascii: "["), UInt8(ascii: "{"): open.append(bytes[at])
            case UInt8(ascii: "]"), UInt8(ascii: "}"): _ = open.popLast()
            case UInt8(ascii: "\""):
                at = JSONTokenScan.endOfString(bytes, from: at)
                continue
            default: break
            }
            at += 1
        }
        return open.last == (bytes[offset] == UInt8(ascii: "]") ? UInt8(ascii: "[") : UInt8(ascii: "{")) ? index : nil
    }

    /// simdjson's reason for refusing `bytes` (when jansson reads them, which only a limit of simdjson's causes).
    static func libraryRefusal(_ bytes: UnsafeRawBufferPointer) -> String {
        guard let parser = ccsd_json_parser_new(maxDepth) else { return "out of memory" }
        defer { ccsd_json_parser_free(parser) }
        var tokens: UnsafePointer<ccsd_json_token>?
        var count = 0
        let status = ccsd_json_parse(parser, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, &tokens, &count)
        return status == 0 ? "a number in it is declined" : String(cString: ccsd_json_error_message(status))
    }

    /// The value when simdjson reads the text and every number in it is kept (`JSONValue.init?(numberText:)`);
    /// nil when the text is declined.
    static func parseWithLibrary(_ bytes: UnsafeRawBufferPointer) -> JSONValue? {
        withTokens(bytes) { tokens in
            var index = 0
            return build(tokens, &index)
        }
    }

    /// Reads the top-level object of `text` without building it: `read` gets a view that builds only the
    /// members it is asked for (every value is still checked as `parse` checks it). nil (and `read` is not
    /// called) when simdjson refuses the text, a number in it is declined, it is not an object, or a top-level
    /// key is not ASCII or is repeated: then `parse` gives the answer.
    public static func withObject<Result>(_ text: String, _ read: (borrowing ObjectView) -> Result?) -> Result? {
        guard !referenceOnly else { return nil }
        var text = text
        return text.withUTF8 { utf8 in withObject(utf8: UnsafeRawBufferPointer(utf8), read) }
    }

    /// `withObject(_:_:)` over UTF-8 bytes (valid only during the call; bytes that are not UTF-8 are declined).
    public static func withObject<Result>(utf8 bytes: UnsafeRawBufferPointer, _ read: (borrowing ObjectView) -> Result?) -> Result? {
        guard !referenceOnly else { return nil }
        return withTokens(bytes) { tokens -> Result? in
            guard let first = tokens.first, first.kind == UInt8(CCSD_JSON_OBJECT.rawValue) else { return nil }
            // The key list in temporary storage (on the stack for a small object): at most one key per two tokens.
            return withUnsafeTemporaryAllocation(of: Int.self, capacity: max(1, Int(first.end) / 2)) { keys -> Result? in
                guard let view = ObjectView(tokens, keys: keys) else { return nil }
                return read(view)
            }
        }
    }

    /// The top-level members of one parsed object, built on demand. Valid only inside `withObject`.
    public struct ObjectView: ~Copyable {
        private let tokens: UnsafeBufferPointer<ccsd_json_token>
        /// Token indexes of the top-level keys (the first `count` of the storage `withObject` lends).
        private let keys: UnsafeMutableBufferPointer<Int>
        /// How many top-level members the object has (their keys are distinct: a repeated key is declined).
        public let count: Int

        /// - Parameter keys: room for at least `tokens[0].end / 2` indexes, valid while the view is.
        fileprivate init?(_ tokens: UnsafeBufferPointer<ccsd_json_token>, keys storage: UnsafeMutableBufferPointer<Int>) {
            guard let first = tokens.first, first.kind == UInt8(CCSD_JSON_OBJECT.rawValue) else { return nil }
            var count = 0
            var seen: Set<String> = []  // the keys' texts, once there are too many to compare each with each
            var index = 1
            while index < Int(first.end) {
                let key = tokens[index]
                guard JSONFrontDoor.isASCII(key) else { return nil }
                if count < 8 {
                    for earlier in storage[0..<count] where JSONFrontDoor.sameText(tokens[earlier], key) { return nil }
                } else {
                    if seen.isEmpty { seen = Set(storage[0..<count].map { JSONFrontDoor.text(tokens[$0]) }) }
                    guard seen.insert(JSONFrontDoor.text(key)).inserted else { return nil }
                }
                storage[count] = index  // each key is followed by its value: at most `first.end / 2` keys
                count += 1
                index = JSONFrontDoor.next(tokens, after: index + 1)
            }
            // Numbers are the one token simdjson passes unchecked: a text with one `parse` refuses is declined.
            for token in tokens where token.kind == UInt8(CCSD_JSON_NUMBER.rawValue) {
                guard JSONFrontDoor.number(token) != nil else { return nil }
            }
            self.tokens = tokens
            self.keys = storage
            self.count = count
        }

        /// The string member named `key` without building anything else; nil when absent or not a string.
        public func string(_ key: String) -> String? {
            guard let at = index(of: key), tokens[at + 1].kind == UInt8(CCSD_JSON_STRING.rawValue) else { return nil }
            return JSONFrontDoor.text(tokens[at + 1])
        }

        /// True when the member named `key` is a string whose UTF-8 is `value`'s (compared as bytes, nothing built).
        public func string(_ key: String, is value: String) -> Bool {
            guard let at = index(of: key), tokens[at + 1].kind == UInt8(CCSD_JSON_STRING.rawValue) else { return false }
            var value = value
            return value.withUTF8 { JSONFrontDoor.sameText(tokens[at + 1], $0) }
        }

        /// The whole object, built as `JSONFrontDoor.parse` builds it; nil when a value in it is declined.
        public func dictionary() -> [String: JSONValue]? {
            var index = 0
            return JSONFrontDoor.build(tokens, &index)?.objectValue
        }

        /// True when the object has a member named `key`.
        public func contains(_ key: String) -> Bool { index(of: key) != nil }

        // The same three reads with the key (and value) as a `StaticString`: its bytes are read in place, with
        // no reference counted (an ack's reader looks up three or four members per ack).

        /// `string(_:)` for a key known at compile time.
        public func string(_ key: StaticString) -> String? {
            guard let at = index(of: Self.utf8(key)), tokens[at + 1].kind == UInt8(CCSD_JSON_STRING.rawValue) else { return nil }
            return JSONFrontDoor.text(tokens[at + 1])
        }

        /// `string(_:is:)` for a key and value known at compile time.
        public func string(_ key: StaticString, is value: StaticString) -> Bool {
            guard let at = index(of: Self.utf8(key)), tokens[at + 1].kind == UInt8(CCSD_JSON_STRING.rawValue) else { return false }
            return JSONFrontDoor.sameText(tokens[at + 1], Self.utf8(value))
        }

        /// `contains(_:)` for a key known at compile time.
        public func contains(_ key: StaticString) -> Bool { index(of: Self.utf8(key)) != nil }

        private func index(of key: String) -> Int? {
            var key = key
            return key.withUTF8 { index(of: $0) }
        }

        private func index(of wanted: UnsafeBufferPointer<UInt8>) -> Int? {
            for at in keys[0..<count] where JSONFrontDoor.sameText(tokens[at], wanted) { return at }
            return nil
        }

        private static func utf8(_ text: StaticString) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        }
    }

    // MARK: Parsers

    /// simdjson parsers are not thread-safe: each parse borrows one from this pool, so one parser is only
    /// ever used by one thread at a time.
    private static let pool = Locked<[Parser]>([])

    private struct Parser: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// One parser kept beside the pool, taken and put back with one atomic exchange each (the address, 0
    /// when empty): the usual parse, one at a time per thread, skips the pool's lock and array. Whoever takes
    /// the address owns that parser until it puts it back, so it is still used by one thread at a time.
    private static let spare = Atomic<UInt>(0)

    /// Runs `body` over the tokens of `bytes`; nil when simdjson refuses the text (or memory runs out).
    static func withTokens<Result>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<ccsd_json_token>) -> Result?) -> Result? {
        let parser: Parser
        if let taken = OpaquePointer(bitPattern: spare.exchange(0, ordering: .acquiring)) {
            parser = Parser(pointer: taken)
        } else {
            guard let pooled = pool.withLock({ $0.popLast() }) ?? ccsd_json_parser_new(maxDepth).map(Parser.init) else { return nil }
            parser = pooled
        }
        defer {
            let address = UInt(bitPattern: Int(bitPattern: parser.pointer))
            if !spare.compareExchange(expected: 0, desired: address, ordering: .releasing).exchanged {
                let kept = pool.withLock { pool in
                    guard pool.count < 16 else { return false }
                    pool.append(parser)
                    return true
                }
                if !kept { ccsd_json_parser_free(parser.pointer) }
            }
        }
        var tokens: UnsafePointer<ccsd_json_token>?
        var count = 0
        let status = ccsd_json_parse(parser.pointer, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, &tokens, &count)
        guard status == 0, let tokens else { return nil }
        return body(UnsafeBufferPointer(start: tokens, count: count))
    }

    // MARK: Building values

    /// The value starting at `index` (advanced past it); nil to decline the text.
    fileprivate static func build(_ tokens: UnsafeBufferPointer<ccsd_json_token>, _ index: inout Int) -> JSONValue? {
        let token = tokens[index]
        index += 1
        switch UInt32(token.kind) {
        case CCSD_JSON_OBJECT.rawValue:
            var object: [String: JSONValue] = [:]
            while index < Int(token.end) {
                let key = text(tokens[index])
                index += 1
                guard let value = build(tokens, &index) else { return nil }
                object[key] = value  // a repeated key keeps its last value
            }
            return .object(object)
        case CCSD_JSON_ARRAY.rawValue:
            var array: [JSONValue] = []
            while index < Int(token.end) {
                guard let value = build(tokens, &index) else { return nil }
                array.append(value)
            }
            return .array(array)
        case CCSD_JSON_STRING.rawValue:
            return .string(text(token))
        case CCSD_JSON_NUMBER.rawValue:
            return number(token)
        case CCSD_JSON_TRUE.rawValue:
            return .bool(true)
        case CCSD_JSON_FALSE.rawValue:
            return .bool(false)
        case CCSD_JSON_NULL.rawValue:
            return .null
        default:
            return nil
        }
    }

    /// A plain integer (`0`, `-?[1-9][0-9]{0,17}`) as `.int` at once; any other number text by
    /// `JSONValue.init?(numberText:)`; nil when that refuses it (not a number, or beyond a 64-bit float).
    fileprivate static func number(_ token: ccsd_json_token) -> JSONValue? {
        if let value = plainInteger(token) { return .int(value) }
        return JSONValue(numberText: text(token))
    }

    /// The value of a number token that is a plain integer (`0`, `-?[1-9][0-9]{0,17}`), which `number`
    /// reads as `.int`; nil for any other number text.
    static func plainInteger(_ token: ccsd_json_token) -> Int64? {
        let bytes = UnsafeRawBufferPointer(start: token.text, count: Int(token.length))
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index = 1 }
        let digits = bytes.count - index
        guard digits >= 1, digits <= 18, bytes[index] != UInt8(ascii: "0") || (digits == 1 && !negative) else { return nil }
        var value: Int64 = 0
        for byte in bytes[index...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return negative ? -value : value
    }

    /// The token's text (unescaped and UTF-8-checked by simdjson).
    static func text(_ token: ccsd_json_token) -> String {
        String(decoding: UnsafeRawBufferPointer(start: token.text, count: Int(token.length)), as: UTF8.self)
    }

    /// Eight bytes at a time (every key of every object read through `withObject` is checked).
    static func isASCII(_ token: ccsd_json_token) -> Bool {
        guard let text = token.text else { return true }
        let bytes = UnsafeRawPointer(text)
        let count = Int(token.length)
        var index = 0
        while index + 8 <= count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < count {
            if bytes.load(fromByteOffset: index, as: UInt8.self) >= 0x80 { return false }
            index += 1
        }
        return true
    }

    static func sameText(_ a: ccsd_json_token, _ b: ccsd_json_token) -> Bool {
        a.length == b.length && (a.length == 0 || memcmp(a.text, b.text, Int(a.length)) == 0)
    }

    /// True when the token's text is exactly the bytes `wanted`.
    static func sameText(_ token: ccsd_json_token, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        Int(token.length) == wanted.count && (wanted.isEmpty || memcmp(token.text, wanted.baseAddress!, wanted.count) == 0)
    }

    /// The index just past the value starting at `index`.
    static func next(_ tokens: UnsafeBufferPointer<ccsd_json_token>, after index: Int) -> Int {
        let kind = UInt32(tokens[index].kind)
        return kind == CCSD_JSON_OBJECT.rawValue || kind == CCSD_JSON_ARRAY.rawValue ? Int(tokens[index].end) : index + 1
    }
}

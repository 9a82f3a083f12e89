import FoundationEssentials

/// A JSON value as ccsd reads and writes CCS payloads (ccs-protocol.md §2–3).
///
/// Integers and other numbers are kept apart so that `"time_to_live": 0` stays an explicit integer
/// and `1` is never mistaken for `true`. Objects are dictionaries: key order carries no meaning in
/// CCS JSON. Parsing goes through `JSONFrontDoor` (simdjson; jansson explains what it refuses);
/// `serialized()` is a small writer of ccsd's own, for the per-message path.
///
/// Numbers are never wrapped, rounded to another value or changed in sign (`init?(numberText:)`): an integer
/// that fits Int64 is `.int`; a number a Double holds as written is `.double`; any other (an integer outside
/// Int64, more digits than a Double holds) is `.number` with its text as written, written back verbatim.
/// Lone UTF-16 surrogate escapes (`"\ud83d"` alone) read as U+FFFD (see `JSONSurrogateRepair`).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number kept as its text as written (JSON number syntax), e.g. `"9223372036854775808"`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses one JSON text through `JSONFrontDoor`. Unpaired surrogate escapes read as U+FFFD (only when
    /// the first parse fails, the text is repaired by `JSONSurrogateRepair` and parsed again).
    /// - Throws: `JSONValue.ParseError` when the text is not JSON: jansson's reason and the byte offset of the
    ///   token where the text breaks, never any of the text ("not valid JSON: invalid token at byte 6"; "not
    ///   valid JSON: a trailing comma at byte 7"; for a text cut short, "not valid JSON: the text ends at byte 6,
    ///   before its JSON value is complete"), or, for a text that nests objects and arrays deeper than `JSONNesting.maxDepth`
    ///   (64), `JSONNesting.rule` ("nested deeper than 64 levels of objects and arrays"), checked in time
    ///   linear in the text.
    public static func parse(_ data: Data) throws(ParseError) -> JSONValue {
        try data.withUnsafeBytes { bytes in Result { () throws(ParseError) in try JSONFrontDoor.parse(bytes) } }.get()
    }

    /// Parses one JSON text held in a string.
    public static func parse(_ text: String) throws(ParseError) -> JSONValue {
        var text = text
        return try text.withUTF8 { utf8 in Result { () throws(ParseError) in try JSONFrontDoor.parse(UnsafeRawBufferPointer(utf8)) } }.get()
    }

    /// The error when a text is not JSON.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The whole message, to follow "the line is" or "the payload is" ("not valid JSON: … at byte 6").
        public var message: String
        /// The byte offset (from 0) of the token where the text stops being JSON; for a text cut short, its
        /// length; nil when the error has no place (nesting too deep).
        public var offset: Int?
        /// True when the text ends before its JSON value is complete (a line or file cut short).
        public var endsEarly: Bool
        public var description: String { message }

        public init(message: String, offset: Int? = nil, endsEarly: Bool = false) {
            self.message = message
            self.offset = offset
            self.endsEarly = endsEarly
        }

    }

    // MARK: Accessors

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The value as an integer: an `.int`, a `.double` with no fractional part, or a `.number` that is an
    /// integer within Int64 (never wrapped: a larger one gives nil).
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .number(let text): return Int64(text)
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int64(d)
        default: return nil
        }
    }
    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// The value when it is exactly an integer Int64 holds, whatever its written form: `.int`; a `.double`
    /// with no fraction within ±2^53 (beyond that a Double is not exact); a `.number` whose text is exactly
    /// an integer (`-0`, `1E2`, `2.50e1`; not `2.5`, `1e-400` or `18446744073709551617`). Never wrapped.
    public var exactIntegerValue: Int64? {
        switch self {
        case .int(let i): return i
        case .number(let text): return JSONValue.exactInteger(ofNumberText: text)
        case .double(let d) where d.rounded() == d && abs(d) <= 9_007_199_254_740_992: return Int64(d)
        default: return nil
        }
    }

    /// The JSON type name for error messages: "string", "integer", "number", "boolean", "object", "array", "null".
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double, .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    // MARK: Writing

    /// Compact JSON text. Object keys are written sorted so that output is stable.
    public func serialized() -> String {
        var out = ""
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    /// Appends compact JSON text to `out`.
    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite, d.rounded() == d, abs(d) < 1e15 { out += String(Int64(d)) } else if d.isFinite { out += "\(d)" } else { out += "null" }
        case .number(let text): out += text
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out += "["
            var first = true
            for element in a {
                if !first { out += "," }
                first = false
                element.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            var first = true
            for key in o.keys.sorted() {
                if !first { out += "," }
                first = false
                JSONValue.writeString(key, to: &out)
                out += ":"
                o[key]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// True when `text` is a JSON number (RFC 8259 §6): `-? int frac? exp?`.
    public static func isNumberText(_ text: some StringProtocol) -> Bool {
        var bytes = Array(text.utf8)[...]
        func digits() -> Int {
            var count = 0
            while let b = bytes.first, (0x30...0x39).contains(b) { bytes.removeFirst(); count += 1 }
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
        if bytes.first == UInt8(ascii: "0") { bytes.removeFirst() } else if digits() == 0 { return false }
        if bytes.first == UInt8(ascii: ".") {
            bytes.removeFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes.removeFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    /// Appends `s` as a JSON string literal (RFC 8259 §7): quotes, backslash and control characters escaped,
    /// and the noncharacters U+FFFE and U+FFFF as `\ufffe` `\uffff`: they are not XML 1.0 `Char`s,
    /// so written raw into a stanza they would not reach the peer as written (ccs-protocol.md §2).
    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
        var needsEscape = false
        // 0xEF leads the UTF-8 of U+F000…U+FFFF, U+FFFE and U+FFFF among them.
        for byte in s.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0xEF {
            needsEscape = true
            break
        }
        if !needsEscape {
            out += s
        } else {
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{FFFE}": out += "\\ufffe"
                case "\u{FFFF}": out += "\\uffff"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

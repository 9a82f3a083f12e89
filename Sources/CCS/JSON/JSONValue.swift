import Foundation

/// A JSON value as ccsd reads and writes CCS payloads (ccs-protocol.md §2–3).
///
/// Integers and other numbers are kept apart so that `"time_to_live": 0` stays an explicit integer
/// and `1` is never mistaken for `true`. Objects are dictionaries: key order carries no meaning in
/// CCS JSON. Parsing goes through `JSONFrontDoor` (simdjson, Foundation for what it declines); `serialized()`
/// is a small writer, because `JSONSerialization.data(withJSONObject:)` is slow on the per-message path.
///
/// Numbers are never wrapped or changed in sign: an integer that fits Int64 is `.int`; an integer outside
/// Int64, or a number Foundation returns as a decimal (more digits than a Double holds), is `.number` with
/// its exact decimal text, written back verbatim; other numbers are `.double`. Limits (Foundation's): a
/// decimal keeps at most 38 significant digits, and a number below the smallest Double reads as 0.
/// Lone UTF-16 surrogate escapes (`"\ud83d"` alone), which Foundation refuses, read as U+FFFD
/// (see `JSONSurrogateRepair`).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number kept as its exact decimal text (JSON number syntax), e.g. `"9223372036854775808"`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses one JSON text through `JSONFrontDoor`. Unpaired surrogate escapes read as U+FFFD (only when
    /// the first parse fails, the text is repaired by `JSONSurrogateRepair` and parsed again).
    /// - Throws: `JSONValue.ParseError` when the text is not JSON; its message carries Foundation's
    ///   reason and position ("not valid JSON: Invalid value around character 6."; a trailing comma, which
    ///   Foundation alone would accept, gives "not valid JSON: Trailing comma around character 7."), or, for a text that nests
    ///   objects and arrays deeper than `JSONNesting.maxDepth` (64), `JSONNesting.rule`
    ///   ("nested deeper than 64 levels of objects and arrays"), checked in time linear in the text.
    public static func parse(_ data: Data) throws(ParseError) -> JSONValue {
        if !JSONFrontDoor.foundationOnly, let value = data.withUnsafeBytes({ JSONFrontDoor.parseWithLibrary($0) }) {
            return value
        }
        return try parseWithFoundation(data)
    }

    /// Parses one JSON text with Foundation's `JSONSerialization` alone: what `JSONFrontDoor` declines, and
    /// the reference its results are tested against.
    static func parseWithFoundation(_ data: Data) throws(ParseError) -> JSONValue {
        // Foundation's cost grows faster than the text with its depth: deeper texts never reach it.
        if data.withUnsafeBytes({ JSONNesting.exceeds(JSONNesting.maxDepth, $0) }) {
            throw ParseError(message: JSONNesting.rule)
        }
        let data = escapingByteOrderMarks(data) ?? data
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            if let repaired = JSONSurrogateRepair.repaired(data),
               let again = try? JSONSerialization.jsonObject(with: repaired, options: [.fragmentsAllowed]) {
                if let error = data.withUnsafeBytes({ JSONTrailingComma.error(in: $0) }) { throw error }
                return JSONValue(foundation: again)
            }
            throw ParseError(message: "not valid JSON: " + ParseError.reason(error))
        }
        // Foundation accepts a comma before `]` or `}`; RFC 8259 does not, and neither does ccsd.
        if let error = data.withUnsafeBytes({ JSONTrailingComma.error(in: $0) }) { throw error }
        return JSONValue(foundation: object)
    }

    /// `data` with every U+FEFF after its first byte written as the escape `\ufeff`, or nil when it has none.
    /// Foundation's JSONSerialization drops a U+FEFF written raw at the start of a string value or key (it
    /// reads it as a byte-order mark); the escape means the same inside a string and is kept. Outside strings
    /// a U+FEFF is not JSON either way; a byte-order mark before the text is left to Foundation.
    static func escapingByteOrderMarks(_ data: Data) -> Data? {
        guard data.count > 3, data.dropFirst().contains(0xEF) else { return nil }
        let bytes = [UInt8](data)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var index = 0
        var changed = false
        while index < bytes.count {
            if index > 0, index + 2 < bytes.count, bytes[index] == 0xEF, bytes[index + 1] == 0xBB, bytes[index + 2] == 0xBF {
                out += Array(#"\ufeff"#.utf8)
                index += 3
                changed = true
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return changed ? Data(out) : nil
    }

    /// Parses one JSON text held in a string.
    public static func parse(_ text: String) throws(ParseError) -> JSONValue {
        var text = text
        if !JSONFrontDoor.foundationOnly, let value = text.withUTF8({ JSONFrontDoor.parseWithLibrary(UnsafeRawBufferPointer($0)) }) {
            return value
        }
        return try parseWithFoundation(Data(text.utf8))
    }

    /// The error when text is not JSON.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }

        /// Foundation's reason for refusing a text, e.g. "Unexpected end of file during JSON parse.".
        static func reason(_ error: any Error) -> String {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            return reason ?? "\(error)"
        }
    }

    /// Converts a Foundation JSON object (from `JSONSerialization`) to a `JSONValue`.
    public init(foundation value: Any) {
        // Containers and strings are tested first: casting a Swift dictionary or array to NSNumber would
        // bridge it to an NSDictionary/NSArray just to fail, which dominated intake cost in profiles.
        if let string = value as? String {
            self = .string(string)
        } else if let dictionary = value as? [String: Any] {
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(dictionary.count)
            for (key, element) in dictionary { object[key] = JSONValue(foundation: element) }
            self = .object(object)
        } else if let array = value as? [Any] {
            self = .array(array.map { JSONValue(foundation: $0) })
        } else if let number = value as? NSNumber {
            // On Linux, booleans arrive as NSNumber with objCType "c"; integers as "i"/"l"/"q".
            let type = number.objCType.pointee
            if type == 0x63 || type == 0x42 {  // "c", "B"
                self = .bool(number.boolValue)
            } else if type == 0x64 || type == 0x66 {  // "d", "f"
                if let decimal = number as? NSDecimalNumber {
                    // More digits than a Double holds (Foundation reports "d"): keep the exact decimal text.
                    let text = decimal.description
                    if let integer = Int64(text) {
                        self = .int(integer)
                    } else if JSONValue.isNumberText(text) {
                        self = .number(text)
                    } else {
                        self = .double(decimal.doubleValue)
                    }
                } else {
                    self = .double(number.doubleValue)
                }
            } else if type == 0x51 || type == 0x4C || type == 0x49 || type == 0x53 || type == 0x43 {
                // Unsigned ("Q", "L", "I", "S", "C"): above Int64.max it would wrap to a negative Int64.
                let value = number.uint64Value
                self = value <= UInt64(Int64.max) ? .int(Int64(value)) : .number(String(value))
            } else {
                self = .int(number.int64Value)
            }
        } else {
            self = .null
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

    /// The integer a JSON number text (RFC 8259 §6) denotes exactly, when it is one that Int64 holds; nil for a
    /// fraction, an integer out of range, or a text that is not a JSON number. Decimal arithmetic on the
    /// digits (no Double), so `1e-400` is not 0 and `9223372036854775808` does not wrap.
    public static func exactInteger(ofNumberText text: String) -> Int64? {
        guard isNumberText(text) else { return nil }
        let bytes = Array(text.utf8)
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var exponent = 0
        var fraction = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: ".") {
                fraction = true
            } else {
                digits.append(bytes[index] - UInt8(ascii: "0"))
                if fraction { exponent -= 1 }
            }
            index += 1
        }
        if index < bytes.count {  // exponent: capped, as no integer Int64 holds needs more than 19 digits
            index += 1
            var sign = 1
            if bytes[index] == UInt8(ascii: "-") { sign = -1; index += 1 } else if bytes[index] == UInt8(ascii: "+") { index += 1 }
            var value = 0
            while index < bytes.count {
                value = min(value * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000)
                index += 1
            }
            exponent += sign * value
        }
        digits.removeFirst(digits.firstIndex { $0 != 0 } ?? digits.count)  // one move, not one per zero
        guard !digits.isEmpty else { return 0 }
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in digits + [UInt8](repeating: 0, count: exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
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

import CCS
import Foundation

/// The path ccsd parsed JSON by before `JSONFrontDoor`: Foundation's `JSONSerialization`, read into a
/// `JSONValue` as ccsd always read it. Not linked into ccsd: tests and `ccsd-bench json-parse` compare the
/// door with it (`withReference`). Kept as it was, with Foundation's quirks, which the door does not share:
/// numbers with more digits than a Double holds become decimals (at most 38 significant digits), a number
/// below the smallest Double reads as 0, UTF-16 and UTF-32 texts are read, and errors carry Foundation's
/// reason and position ("Invalid value around character 6.").
public enum FoundationJSON {
    /// Runs `body` with every `JSONFrontDoor` parse of this task going to `parse(_:)`.
    public static func withReference<Result>(_ body: () throws -> Result) rethrows -> Result {
        JSONFrontDoor.referenceParser.withLock { parser in
            if parser == nil { parser = { (bytes) throws(JSONValue.ParseError) in try parse(Data(bytes)) } }
        }
        return try JSONFrontDoor.referenceSwitch.withValue(true) { try body() }
    }

    /// `rule` with the parser's words for why a text is not JSON cut ("not valid JSON: …" up to a `;`): they
    /// differ between the door and Foundation, while the rest of a rule is ccsd's own.
    public static func withoutParserWords(_ rule: String) -> String {
        guard let start = rule.range(of: "not valid JSON") else { return rule }
        let rest = rule[start.upperBound...]
        return rule[..<start.upperBound] + (rest.firstIndex(of: ";").map { String(rest[$0...]) } ?? "")
    }

    /// `error` with the parser's words cut from its rule.
    public static func withoutParserWords(_ error: InboundParseError) -> InboundParseError {
        var error = error
        error.rule = withoutParserWords(error.rule)
        return error
    }

    /// `message` with the parser's words cut from an upstream message's `decode_error`.
    public static func withoutParserWords(_ message: InboundMessage?) -> InboundMessage? {
        guard case .upstream(var upstream) = message, let decodeError = upstream.decodeError else { return message }
        upstream.decodeError = withoutParserWords(decodeError)
        return .upstream(upstream)
    }

    /// Parses one JSON text with Foundation's `JSONSerialization` alone.
    /// - Throws: `JSONValue.ParseError` with Foundation's reason and position; a trailing comma, which
    ///   Foundation alone accepts, gives "not valid JSON: Trailing comma around character 7.".
    public static func parse(_ data: Data) throws(JSONValue.ParseError) -> JSONValue {
        // Foundation's cost grows faster than the text with its depth: deeper texts never reach it.
        if data.withUnsafeBytes({ JSONNesting.exceeds(JSONNesting.maxDepth, $0) }) {
            throw JSONValue.ParseError(message: JSONNesting.rule)
        }
        let data = escapingByteOrderMarks(data) ?? data
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            if let repaired = JSONSurrogateRepair.repaired(data),
               let again = try? JSONSerialization.jsonObject(with: repaired, options: [.fragmentsAllowed]) {
                if let error = trailingComma(in: data) { throw error }
                return FoundationJSONValue.value(again)
            }
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw JSONValue.ParseError(message: "not valid JSON: " + reason, endsEarly: reason.contains("Unexpected end of file"))
        }
        if let error = trailingComma(in: data) { throw error }
        return FoundationJSONValue.value(object)
    }

    /// `data` with every U+FEFF after its first byte written as the escape `\ufeff`, or nil when it has none.
    /// Foundation's JSONSerialization drops a U+FEFF written raw at the start of a string value or key (it
    /// reads it as a byte-order mark); the escape means the same inside a string and is kept.
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

    /// The error for a text Foundation read that has a comma followed (after whitespace) by `]` or `}`
    /// outside string literals (RFC 8259 §4–5 refuse it; Foundation accepts it).
    static func trailingComma(in data: Data) -> JSONValue.ParseError? {
        let bytes = [UInt8](data)
        var index = 0
        var comma: Int?
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                comma = nil
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: ","):
                comma = index
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if let comma { return JSONValue.ParseError(message: "not valid JSON: Trailing comma around character \(comma).") }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                break
            default:
                comma = nil
            }
            index += 1
        }
        return nil
    }
}

/// Finds a trailing comma (`[1,]`, `{"a":1,}`): RFC 8259 §4–5 allow a comma only between members or
/// elements, but Foundation's `JSONSerialization` (the reader behind `JSONValue.parseWithFoundation`)
/// accepts one before a closing `]` or `}`. Run on a text Foundation has already read, so that the text is
/// otherwise JSON: a lexical pass (string literals skipped with their escapes) is then exact.
enum JSONTrailingComma {
    /// The error for a text Foundation read that has a trailing comma, or nil when it has none.
    /// Its message gives the comma's byte offset as Foundation gives positions:
    /// "not valid JSON: Trailing comma around character 7.".
    static func error(in bytes: UnsafeRawBufferPointer) -> JSONValue.ParseError? {
        guard let offset = offset(in: bytes) else { return nil }
        return JSONValue.ParseError(message: "not valid JSON: Trailing comma around character \(offset).")
    }

    /// Byte offset of the first comma followed (after whitespace) by `]` or `}`, outside string literals.
    static func offset(in bytes: UnsafeRawBufferPointer) -> Int? {
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
                if let comma { return comma }
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

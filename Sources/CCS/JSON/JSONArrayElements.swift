/// The elements of one JSON array as the byte ranges they were written in: so that each element can be
/// handed on exactly as written (`2419201.0` stays `2419201.0`, `1e400` reaches the validator that names
/// its field), rather than parsed as a whole and written again.
///
/// A linear lexical scan (RFC 8259 §2, §5): it follows string literals with their escapes and `{`/`[`
/// nesting, and splits on the commas of the array's own level. It checks the array's own punctuation (an
/// opening `[`, one value between commas, a closing `]`) but not what is inside an element: whether each
/// element is JSON is for the parser that reads it.
public enum JSONArrayElements: Sendable, Equatable {
    /// The elements' byte ranges (each without surrounding whitespace), in order; `end` is the index just
    /// past the closing `]`.
    case elements([Range<Int>], end: Int)
    /// More than the `atMost` limit of elements (the scan stopped there).
    case moreThan(Int)
    /// The array's punctuation is broken at byte `offset`: `reason` says how.
    case malformed(offset: Int, reason: String)

    /// Scans the array whose `[` is at `start` in `bytes`, stopping after `limit + 1` elements.
    /// - Precondition: `bytes[start]` is `[`.
    public static func scan(_ bytes: [UInt8], openingAt start: Int, atMost limit: Int = Int.max) -> JSONArrayElements {
        precondition(bytes[start] == UInt8(ascii: "["), "an array opens with [")
        var ranges: [Range<Int>] = []
        var depth = 0                  // nesting inside the current element
        var elementStart: Int?         // first byte of the current element
        var elementEnd = start + 1     // just past its last non-whitespace byte
        var index = start + 1
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                if elementStart == nil { elementStart = index }
                index = JSONTokenScan.endOfString(bytes, from: index)
                elementEnd = index
                continue
            case UInt8(ascii: ","), UInt8(ascii: "]"):
                // (A `where` clause would guard only the last pattern of the case.)
                guard depth == 0 else {
                    if byte == UInt8(ascii: "]") { depth -= 1 }
                    elementEnd = index + 1
                    break
                }
                guard let first = elementStart else {
                    if byte == UInt8(ascii: "]"), ranges.isEmpty { return .elements([], end: index + 1) }
                    return .malformed(offset: index, reason: "a value is missing before `\(Character(Unicode.Scalar(byte)))`")
                }
                ranges.append(first..<elementEnd)
                if ranges.count > limit { return .moreThan(limit) }
                elementStart = nil
                if byte == UInt8(ascii: "]") { return .elements(ranges, end: index + 1) }
            case 0x20, 0x09, 0x0A, 0x0D:
                break
            default:
                if elementStart == nil { elementStart = index }
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") {
                    guard depth > 0 else { return .malformed(offset: index, reason: "`}` closes nothing") }
                    depth -= 1
                }
                elementEnd = index + 1
            }
            index += 1
        }
        return .malformed(offset: count, reason: "the array is not closed")
    }
}

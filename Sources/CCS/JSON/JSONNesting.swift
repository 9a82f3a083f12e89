/// The nesting bound on every JSON text ccsd reads (ccs-protocol.md §2–3: CCS payloads nest 3 deep).
///
/// Building a `JSONValue` recurses once per level, and the parsers ccsd has used (Foundation's
/// `JSONSerialization` took minutes of CPU for 1 MiB of `[`) cost more than the text with its depth. So a text
/// that nests objects and arrays deeper than `maxDepth` is refused, by simdjson as it walks and, for a text it
/// refuses, by one linear pass over its bytes before anything else reads it.
public enum JSONNesting {
    /// The deepest nesting of objects and arrays ccsd reads: `JSONFrontDoor.maxDepth` (64). `{}` nests 1 deep,
    /// `{"a":[1]}` 2 deep.
    public static let maxDepth = JSONFrontDoor.maxDepth

    /// The rule a deeper text breaks, in words, to follow "the line is" or "the payload is"
    /// ("nested deeper than 64 levels of objects and arrays").
    public static let rule = "nested deeper than \(maxDepth) levels of objects and arrays"

    /// True when `bytes` opens more than `limit` objects or arrays inside one another.
    ///
    /// A lexical pass, not a parser (linear in the text, constant memory): it counts `{` `[` against `}` `]`
    /// outside string literals, which it skips by their quotes and backslash escapes. On valid JSON it is
    /// exact; on broken JSON its count is at least the depth any parser reaches before the first error, so a
    /// text it passes never makes a parser recurse deeper than `limit`.
    public static func exceeds(_ limit: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var depth = 0
        var index = 0
        let count = bytes.count
        while index < count {
            switch bytes[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            case UInt8(ascii: "\""):
                index += 1
                while index < count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            default:
                break
            }
            index += 1
        }
        return false
    }
}

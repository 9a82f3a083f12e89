import FoundationEssentials

/// Rewrites unpaired UTF-16 surrogate escapes in JSON text to `\uFFFD`, so that simdjson, which refuses
/// them, reads them as U+FFFD (the replacement character, as any UTF-16 decoder does; RFC 8259 §8.2 leaves
/// their meaning open).
///
/// A lexical pass, not a parser: it walks backslash escapes only (a backslash can appear in valid JSON only
/// inside a string), so `\\ud83d` (an escaped backslash, then the text `ud83d`) is left alone. A high
/// surrogate escape (`\uD800`–`\uDBFF`) followed at once by a low one (`\uDC00`–`\uDFFF`) is a pair and is
/// kept; any other surrogate escape is replaced. The replacement has the same length (6 bytes), so byte
/// positions in error messages stay true. Used only after a first parse failed.
public enum JSONSurrogateRepair {
    /// The repaired text, or nil when `data` has no unpaired surrogate escape (nothing to repair).
    public static func repaired(_ data: Data) -> Data? {
        var bytes = [UInt8](data)
        return repair(&bytes) ? Data(bytes) : nil
    }

    /// Repairs `text`; returns it unchanged when there is nothing to repair.
    public static func repaired(_ text: String) -> String {
        var bytes = Array(text.utf8)
        return repair(&bytes) ? String(decoding: bytes, as: UTF8.self) : text
    }

    /// Rewrites unpaired surrogate escapes in place. Returns true when it changed anything.
    public static func repair(_ bytes: inout [UInt8]) -> Bool {
        var changed = false
        var index = 0
        let count = bytes.count
        while index < count {
            guard bytes[index] == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            guard index + 1 < count else { break }
            guard bytes[index + 1] == UInt8(ascii: "u"), let unit = hexUnit(bytes, at: index + 2) else {
                index += 2  // `\\`, `\"`, `\n`, …: the escaped byte is never the start of an escape.
                continue
            }
            switch unit {
            case 0xD800...0xDBFF:
                if index + 7 < count, bytes[index + 6] == UInt8(ascii: "\\"), bytes[index + 7] == UInt8(ascii: "u"),
                   let low = hexUnit(bytes, at: index + 8), (0xDC00...0xDFFF).contains(low) {
                    index += 12  // a valid pair
                } else {
                    replace(&bytes, at: index)
                    changed = true
                    index += 6
                }
            case 0xDC00...0xDFFF:
                replace(&bytes, at: index)  // a low surrogate not preceded by a high one
                changed = true
                index += 6
            default:
                index += 6
            }
        }
        return changed
    }

    private static func replace(_ bytes: inout [UInt8], at index: Int) {
        for (offset, byte) in "FFFD".utf8.enumerated() { bytes[index + 2 + offset] = byte }
    }

    /// The 4 hex digits at `index` as a UTF-16 code unit, or nil.
    private static func hexUnit(_ bytes: [UInt8], at index: Int) -> UInt16? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = JSONTokenScan.hexDigit(byte) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        return value
    }
}

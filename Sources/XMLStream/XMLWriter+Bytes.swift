/// The escapes of `XMLWriter` into a byte buffer: the per-message path builds a downstream stanza as UTF-8
/// bytes once and writes them as they are, with no `String` growth.
extension XMLWriter {
    /// Appends `s` as XML character data: the same bytes `appendEscapedText(_:to:)` appends to a `String`
    /// (XML 1.0 §2.4, §2.11; non-`Char`s as U+FFFD).
    public static func appendEscapedText(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendEscaped($0, inAttribute: false, to: &out) }
    }

    /// `appendEscapedText(_:to:)` over valid UTF-8 bytes.
    public static func appendEscapedText(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        appendEscaped(bytes, inAttribute: false, to: &out)
    }

    /// Appends `s` as the value of a quoted attribute: the same bytes `appendEscapedAttribute(_:to:)`
    /// appends to a `String` (XML 1.0 §2.3, §3.3.3).
    public static func appendEscapedAttribute(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendEscaped($0, inAttribute: true, to: &out) }
    }

    /// Escapes valid UTF-8 `bytes` (a `String`'s) into `out`, copying the runs between escapes whole.
    static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, inAttribute: Bool, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + bytes.count + 16)
        walkEscaped(bytes, inAttribute: inAttribute,
                    run: { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[$0])) },
                    replace: { $0.withUTF8Buffer { out.append(contentsOf: $0) } })
    }

    /// Writes the bytes `appendEscapedText(utf8:to:)` (`inAttribute` false) or the attribute escape (true)
    /// appends into the start of `out`, and returns how many; nil if they do not fit (what was written then is
    /// to be thrown away). For a buffer allocated once with room to spare, with no `Array` growth per piece
    /// (a downstream stanza has three pieces per markup character in its JSON).
    public static func writeEscaped(utf8 bytes: UnsafeBufferPointer<UInt8>, inAttribute: Bool,
                                    to out: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        var written = 0
        var fits = true
        walkEscaped(bytes, inAttribute: inAttribute,
                    run: { range in
                        guard fits, range.count <= out.count - written else { fits = false; return }
                        (out.baseAddress! + written).initialize(from: bytes.baseAddress! + range.lowerBound, count: range.count)
                        written += range.count
                    },
                    replace: { replacement in
                        let count = replacement.utf8CodeUnitCount
                        guard fits, count <= out.count - written else { fits = false; return }
                        (out.baseAddress! + written).initialize(from: replacement.utf8Start, count: count)
                        written += count
                    })
        return fits ? written : nil
    }

    /// The escaping rule, walked once over valid UTF-8 `bytes`: `run` gets each range copied as it is and
    /// `replace` each replacement, in order. Every escape into bytes (appended or written in place) is this one
    /// walk, so they cannot disagree.
    @inline(__always)
    private static func walkEscaped(_ bytes: UnsafeBufferPointer<UInt8>, inAttribute: Bool,
                                    run: (Range<Int>) -> Void, replace: (StaticString) -> Void) {
        let end = bytes.count
        var runStart = 0
        var index = 0
        while index < end {
            // The bytes up to the next one that may need a replacement (sixteen at a time) go as they are;
            // the switch below decides what that byte becomes (any other byte stays as it is).
            index = ByteScan.nextXMLSpecial(in: bytes, from: index, inAttribute: inAttribute)
            if index == end { break }
            let byte = bytes[index]
            var next = index + 1
            let replacement: StaticString
            switch byte {
            case UInt8(ascii: "&"): replacement = "&amp;"
            case UInt8(ascii: "<"): replacement = "&lt;"
            case UInt8(ascii: ">"): replacement = "&gt;"
            case UInt8(ascii: "\"") where inAttribute: replacement = "&quot;"
            case UInt8(ascii: "'") where inAttribute: replacement = "&apos;"
            case 0x09 where inAttribute: replacement = "&#9;"
            case 0x0A where inAttribute: replacement = "&#10;"
            case 0x0D: replacement = "&#13;"
            case 0x09, 0x0A:
                index = next
                continue
            case 0x00...0x1F:
                replacement = "\u{FFFD}"
            case 0xEF:
                // U+FFFE is EF BF BE, U+FFFF is EF BF BF.
                guard index + 2 < end, bytes[index + 1] == 0xBF, bytes[index + 2] == 0xBE || bytes[index + 2] == 0xBF else {
                    index = next
                    continue
                }
                replacement = "\u{FFFD}"
                next = index + 3
            default:
                index = next
                continue
            }
            if runStart < index { run(runStart..<index) }
            replace(replacement)
            index = next
            runStart = next
        }
        if runStart < end { run(runStart..<end) }
    }
}

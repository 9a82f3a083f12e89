import XMLStream

/// JSON writing into a byte buffer: the same text as `write(to:)` and `writeString(_:to:)` on a `String`,
/// as UTF-8 bytes, for the per-message path (stanzas and event lines), which then grows no `String`.
extension JSONValue {
    /// Appends compact JSON text to `out`: the bytes of `write(to:)` on a `String` (object keys sorted).
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: JSONValue.append("null", to: &out)
        case .bool(let b): JSONValue.append(b ? "true" : "false", to: &out)
        case .int(let i): JSONValue.append(i, to: &out)
        case .double(let d):
            if d.isFinite, d.rounded() == d, abs(d) < 1e15 {
                JSONValue.append(Int64(d), to: &out)
            } else if d.isFinite {
                out.append(contentsOf: "\(d)".utf8)
            } else {
                JSONValue.append("null", to: &out)
            }
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in a {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            var first = true
            for key in o.keys.sorted() {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                o[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a JSON string literal: the bytes of `writeString(_:to:)` on a `String` (RFC 8259 §7;
    /// U+FFFE and U+FFFF as `\ufffe` `\uffff`, ccs-protocol.md §2).
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(utf8: $0, to: &out) }
    }

    /// `writeString` over valid UTF-8 bytes, copying the runs between escapes whole.
    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + bytes.count + 2)
        out.append(UInt8(ascii: "\""))
        walkString(bytes, run: { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[$0])) },
                   escape: { out.append(contentsOf: $0) })
        out.append(UInt8(ascii: "\""))
    }

    /// The most bytes `writeString(utf8:at:)` writes for `count` bytes of text: the quotes, and six bytes
    /// (`\u00XX`) for each byte at worst.
    static func maximumStringBytes(_ count: Int) -> Int { 2 + 6 * count }

    /// Writes the bytes `writeString(utf8:to:)` appends at `out`, which has room for
    /// `maximumStringBytes(bytes.count)` bytes, and returns how many it wrote: for a caller that sized one
    /// buffer for a whole text (intake's common shape), with no `Array` growth or uniqueness check per piece.
    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, at out: UnsafeMutablePointer<UInt8>) -> Int {
        var at = out
        at.initialize(to: UInt8(ascii: "\""))
        at += 1
        walkString(bytes, run: { range in
            at.initialize(from: bytes.baseAddress! + range.lowerBound, count: range.count)
            at += range.count
        }, escape: { escape in
            at.initialize(from: escape.baseAddress!, count: escape.count)
            at += escape.count
        })
        at.initialize(to: UInt8(ascii: "\""))
        at += 1
        return out.distance(to: at)
    }

    /// The escaping rule of a JSON string, walked once over valid UTF-8 `bytes` (the quotes are the caller's):
    /// `run` gets each non-empty range copied as it is and `escape` the bytes of each escape, in order. Every
    /// string written as bytes (appended or written in place) is this one walk, so they cannot disagree.
    @inline(__always)
    private static func walkString(_ bytes: UnsafeBufferPointer<UInt8>, run: (Range<Int>) -> Void,
                                   escape: (UnsafeBufferPointer<UInt8>) -> Void) {
        let end = bytes.count
        var runStart = 0
        var index = 0
        while index < end {
            // The bytes up to the next one that may need an escape (sixteen at a time) go as they are; the
            // switch below decides what that byte becomes (any other byte stays as it is).
            index = ByteScan.nextJSONStringSpecial(in: bytes, from: index)
            if index == end { break }
            let byte = bytes[index]
            var next = index + 1
            let text: StaticString
            switch byte {
            case 0x22: text = "\\\""
            case 0x5C: text = "\\\\"
            case 0x0A: text = "\\n"
            case 0x0D: text = "\\r"
            case 0x09: text = "\\t"
            case 0xEF:
                guard index + 2 < end, bytes[index + 1] == 0xBF, bytes[index + 2] == 0xBE || bytes[index + 2] == 0xBF else {
                    index = next
                    continue
                }
                text = bytes[index + 2] == 0xBE ? "\\ufffe" : "\\uffff"
                next = index + 3
            case 0x00...0x1F:
                // Other C0 controls: \u00XX, lowercase hex.
                if runStart < index { run(runStart..<index) }
                let hex: StaticString = "0123456789abcdef"
                var code: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"),
                                                                        UInt8(ascii: "0"), hex.utf8Start[Int(byte >> 4)],
                                                                        hex.utf8Start[Int(byte & 0xF)])
                withUnsafeBytes(of: &code) { escape(UnsafeBufferPointer(start: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 6)) }
                index = next
                runStart = next
                continue
            default:
                index = next
                continue
            }
            if runStart < index { run(runStart..<index) }
            escape(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            index = next
            runStart = next
        }
        if runStart < end { run(runStart..<end) }
    }

    /// Appends the ASCII of a static text.
    static func append(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Appends `value` in decimal, as `String(value)` writes it.
    public static func append(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of UInt64.max, back to front
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }
}

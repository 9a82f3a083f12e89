/// Checks that a byte stream, fed in any chunking, is well-formed UTF-8 (Unicode §3.9, Table 3-7:
/// no overlong forms, no surrogates, nothing above U+10FFFF).
///
/// The stream parser runs it before libxml2 so that invalid UTF-8 is reported the same way
/// (`XMLStreamError.Kind.invalidCharacter`) wherever the chunk boundaries fall; libxml2 on its own
/// reports some of them as internal errors and tries to recover by switching to ISO-8859-1.
/// Cost: one pass over the bytes, eight ASCII bytes at a time.
struct UTF8Validator {
    /// Continuation bytes still expected for the current sequence.
    private var remaining = 0
    /// The allowed range of the next continuation byte (narrowed after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// The offset of the first byte in `bytes` that cannot continue valid UTF-8, or `nil` when all can.
    /// An incomplete sequence at the end is remembered and checked against the next call's bytes.
    mutating func firstInvalidOffset(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var index = 0
        while index < count {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            if remaining > 0 {
                guard byte >= lower, byte <= upper else { return index }
                lower = 0x80
                upper = 0xBF
                remaining -= 1
                index += 1
                continue
            }
            if byte < 0x80 {
                index += 1
                while index + 8 <= count,
                    base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
                {
                    index += 8
                }
                continue
            }
            switch byte {
            case 0xC2...0xDF: remaining = 1
            case 0xE0: remaining = 2; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: remaining = 2
            case 0xED: remaining = 2; upper = 0x9F
            case 0xF0: remaining = 3; lower = 0x90
            case 0xF1...0xF3: remaining = 3
            case 0xF4: remaining = 3; upper = 0x8F
            default: return index
            }
            index += 1
        }
        return nil
    }
}

/// Tests on eight bytes at once, a word loaded from a byte buffer (`loadUnaligned(as: UInt64.self)`): the
/// escaping scans (`XMLWriter.appendEscaped`, `JSONValue.writeString`, the event writer's plain-text check)
/// skip eight bytes with one test when none of them is a byte they look at.
///
/// Each test is nonzero exactly when some byte of the word qualifies (the classic zero-byte test: which
/// bits are set above the first qualifying byte is not meaningful, only whether any is).
public enum ByteWord {
    /// Nonzero when some byte of `word` is `byte`.
    @inlinable @inline(__always)
    public static func has(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        let x = word ^ (0x0101_0101_0101_0101 &* UInt64(byte))
        return (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
    }

    /// Nonzero when some byte of `word` is below `bound` (at most 0x80).
    @inlinable @inline(__always)
    public static func hasBelow(_ word: UInt64, _ bound: UInt8) -> UInt64 {
        (word &- 0x0101_0101_0101_0101 &* UInt64(bound)) & ~word & 0x8080_8080_8080_8080
    }

    /// Nonzero when some byte of `word` is 0x80 or above (not ASCII).
    @inlinable @inline(__always)
    public static func hasNonASCII(_ word: UInt64) -> UInt64 {
        word & 0x8080_8080_8080_8080
    }
}

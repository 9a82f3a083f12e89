import Testing
@testable import XMLStream

/// `ByteWord`'s eight-bytes-at-once tests against the byte-by-byte rule: for words made of bytes near the
/// values the escaping scans look for, each test is nonzero exactly when some byte qualifies.
struct ByteWordTests {
    /// Bytes around every value and bound the scans use, and the extremes.
    static let interesting: [UInt8] = [0x00, 0x01, 0x08, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x26, 0x27, 0x3C,
                                       0x3E, 0x3F, 0x40, 0x41, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0x81, 0xBF, 0xEE, 0xEF,
                                       0xF0, 0xFE, 0xFF]

    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    /// Every word of one interesting byte repeated with another at one position, and of two interesting bytes
    /// side by side among plain ones: where a borrow from one byte into the next could fool a test.
    static var words: [[UInt8]] {
        var words: [[UInt8]] = []
        for fill in interesting {
            for other in interesting {
                for position in 0..<8 {
                    var bytes = [UInt8](repeating: fill, count: 8)
                    bytes[position] = other
                    words.append(bytes)
                    if position < 7 {
                        var pair = [UInt8](repeating: 0x41, count: 8)
                        pair[position] = fill
                        pair[position + 1] = other
                        words.append(pair)
                    }
                }
            }
        }
        return words
    }

    @Test func eachTestIsNonzeroExactlyWhenSomeByteQualifies() {
        for bytes in Self.words {
            let word = Self.word(bytes)
            for value in [0x22, 0x26, 0x27, 0x3C, 0x3E, 0x5C, 0xEF, 0x00, 0xFF] as [UInt8] {
                #expect((ByteWord.has(word, value) != 0) == bytes.contains(value), "has \(value) in \(bytes)")
            }
            for bound in [0x01, 0x20, 0x40, 0x80] as [UInt8] {
                #expect((ByteWord.hasBelow(word, bound) != 0) == bytes.contains { $0 < bound }, "below \(bound) in \(bytes)")
            }
            #expect((ByteWord.hasNonASCII(word) != 0) == bytes.contains { $0 >= 0x80 })
        }
    }
}

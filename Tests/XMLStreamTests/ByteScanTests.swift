import Testing
@testable import XMLStream

/// `ByteScan`'s sixteen-bytes-at-once scans against the byte-by-byte rule: for texts made of bytes near the
/// values the escapes look for, at every length and offset around the sixteen-byte steps, each scan stops at
/// exactly the first byte that qualifies.
struct ByteScanTests {
    /// Bytes around every value and bound the scans use, and the extremes.
    static let interesting: [UInt8] = [0x00, 0x01, 0x08, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x26, 0x27, 0x3C,
                                       0x3E, 0x3F, 0x40, 0x41, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0x81, 0xBF, 0xEE, 0xEF,
                                       0xF0, 0xFE, 0xFF]

    static func jsonString(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0xEF }
    static func jsonPlainStop(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C || byte >= 0x80 }
    static func xml(_ byte: UInt8, attribute: Bool) -> Bool {
        if byte < 0x20 { return attribute || (byte != 0x09 && byte != 0x0A) }
        return [0x26, 0x3C, 0x3E, 0xEF].contains(byte) || (attribute && (byte == 0x22 || byte == 0x27))
    }

    /// Each interesting byte alone at every position of plain texts of 0 to 40 bytes, and next to every other
    /// interesting byte, scanned from every start.
    static var texts: [[UInt8]] {
        var texts: [[UInt8]] = [[]]
        for length in 1...40 {
            for byte in interesting {
                for position in Set([0, length / 2, length - 1, min(15, length - 1), min(16, length - 1)]) {
                    var text = [UInt8](repeating: 0x41, count: length)
                    text[position] = byte
                    texts.append(text)
                }
            }
        }
        for first in interesting {
            for second in interesting {
                var text = [UInt8](repeating: 0x61, count: 34)
                text[15] = first
                text[16] = second
                text[33] = first
                texts.append(text)
            }
        }
        return texts
    }

    @Test func eachScanStopsAtTheFirstByteThatQualifies() {
        for text in Self.texts {
            text.withUnsafeBufferPointer { bytes in
                for start in Set([0, 1, 7, 15, 16, 17, text.count]) where start <= text.count {
                    let rest = text[start...]
                    #expect(ByteScan.nextJSONStringSpecial(in: bytes, from: start)
                            == (rest.firstIndex(where: Self.jsonString) ?? text.count), "json \(text) from \(start)")
                    for attribute in [false, true] {
                        #expect(ByteScan.nextXMLSpecial(in: bytes, from: start, inAttribute: attribute)
                                == (rest.firstIndex { Self.xml($0, attribute: attribute) } ?? text.count),
                                "xml attribute \(attribute) \(text) from \(start)")
                    }
                }
                #expect(ByteScan.isPlainJSONText(bytes) == !text.contains(where: Self.jsonPlainStop), "plain \(text)")
            }
        }
    }
}

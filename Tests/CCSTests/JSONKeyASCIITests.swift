import CJSONFrontDoor
import Testing
@testable import CCS

/// `JSONFrontDoor.isASCII` (eight bytes at a time) against the byte-by-byte rule, for every length up to 40
/// and a non-ASCII byte at every position (a key that is not ASCII declines `withObject`).
@Suite struct JSONKeyASCIITests {
    @Test func wordAtATimeAgreesWithEachByte() {
        for length in 0...40 {
            var bytes = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            #expect(Self.check(bytes) == true, "length \(length)")
            for position in 0..<length {
                for high: UInt8 in [0x80, 0xC3, 0xFF] {
                    let kept = bytes[position]
                    bytes[position] = high
                    #expect(Self.check(bytes) == false, "length \(length), 0x\(String(high, radix: 16)) at \(position)")
                    bytes[position] = kept
                }
            }
        }
    }

    private static func check(_ bytes: [UInt8]) -> Bool {
        let reference = bytes.allSatisfy { $0 < 0x80 }
        let fast = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                JSONFrontDoor.isASCII(ccsd_json_token(text: chars.baseAddress, length: UInt32(chars.count), end: 0, kind: 3))
            }
        }
        #expect(fast == reference)
        return fast
    }
}

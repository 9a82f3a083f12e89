import Testing
import XMLStream

/// The byte-buffer escapes (what downstream stanzas are built with) write exactly the bytes of the
/// `String` escapes, on every ASCII character and on the multi-byte sequences that need care.
@Suite("XML writer into bytes")
struct XMLWriterBytesTests {
    static let samples: [String] = {
        var samples = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        samples += ["", "plain", "a&b<c>d\"e'f", "\r\n\t", "line\rbreak", "]]>", "é", "😀", "\u{FFFD}", "\u{FFFE}", "\u{FFFF}",
                    "\u{F000}", "\u{FEFF}", "\u{EFFF}", "x\u{FFFE}y\u{FFFF}z", "\u{1}\u{1F}\u{7F}", "tail\u{FFFF}",
                    "{\"to\":\"tok\",\"data\":{\"text\":\"<&> \\\"q\\\"\"}}", String(repeating: "ab<", count: 200)]
        return samples
    }()

    @Test func textMatchesTheStringEscape() {
        for sample in Self.samples {
            var text = "<"
            XMLWriter.appendEscapedText(sample, to: &text)
            var bytes: [UInt8] = Array("<".utf8)
            XMLWriter.appendEscapedText(sample, to: &bytes)
            #expect(bytes == Array(text.utf8), "text escape of \(sample.unicodeScalars.map { $0.value })")
        }
    }

    @Test func attributeMatchesTheStringEscape() {
        for sample in Self.samples {
            var text = ""
            XMLWriter.appendEscapedAttribute(sample, to: &text)
            var bytes: [UInt8] = []
            XMLWriter.appendEscapedAttribute(sample, to: &bytes)
            #expect(bytes == Array(text.utf8), "attribute escape of \(sample.unicodeScalars.map { $0.value })")
        }
    }
}

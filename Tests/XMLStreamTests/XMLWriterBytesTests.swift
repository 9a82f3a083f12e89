import Testing
import XMLStream

/// The byte-buffer escapes (what every stanza is built with; the `String` escapes call them) write what a
/// plain scalar-by-scalar reading of the rule gives, on every ASCII character and on the multi-byte sequences
/// that need care, and the `String` escapes write the same.
@Suite("XML writer into bytes")
struct XMLWriterBytesTests {
    static let samples: [String] = {
        var samples = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        samples += ["", "plain", "a&b<c>d\"e'f", "\r\n\t", "line\rbreak", "]]>", "é", "😀", "\u{FFFD}", "\u{FFFE}", "\u{FFFF}",
                    "\u{F000}", "\u{FEFF}", "\u{EFFF}", "x\u{FFFE}y\u{FFFF}z", "\u{1}\u{1F}\u{7F}", "tail\u{FFFF}",
                    "{\"to\":\"tok\",\"data\":{\"text\":\"<&> \\\"q\\\"\"}}", String(repeating: "ab<", count: 200)]
        return samples
    }()

    /// The rule, one scalar at a time (XML 1.0 §2.2, §2.4, §3.3.3): markup characters as entities, CR (and in
    /// an attribute tab and LF) as character references, other non-`Char`s as U+FFFD.
    static func reference(_ s: String, inAttribute: Bool) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where inAttribute: out += "&quot;"
            case "'" where inAttribute: out += "&apos;"
            case "\t" where inAttribute: out += "&#9;"
            case "\n" where inAttribute: out += "&#10;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    @Test func textFollowsTheRule() {
        for sample in Self.samples {
            let expected = "<" + Self.reference(sample, inAttribute: false)
            var bytes: [UInt8] = Array("<".utf8)
            XMLWriter.appendEscapedText(sample, to: &bytes)
            #expect(bytes == Array(expected.utf8), "text escape of \(sample.unicodeScalars.map { $0.value })")
            var text = "<"
            XMLWriter.appendEscapedText(sample, to: &text)
            #expect(text == expected)
        }
    }

    @Test func attributeFollowsTheRule() {
        for sample in Self.samples {
            let expected = Self.reference(sample, inAttribute: true)
            var bytes: [UInt8] = []
            XMLWriter.appendEscapedAttribute(sample, to: &bytes)
            #expect(bytes == Array(expected.utf8), "attribute escape of \(sample.unicodeScalars.map { $0.value })")
            var text = ""
            XMLWriter.appendEscapedAttribute(sample, to: &text)
            #expect(text == expected)
        }
    }
}

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

    /// Writing in place (`writeEscaped`, what a downstream stanza is built with) writes what appending writes,
    /// byte for byte, in both escapes, when the buffer has exactly the room; with one byte less it says so (nil).
    @Test func writeInPlaceMatchesAppend() {
        for sample in Self.samples + [String(repeating: "\u{FFFF}<", count: 40), "ends in EF BF\u{EFBF}", "a\u{EFBF}"] {
            for inAttribute in [false, true] {
                var appended: [UInt8] = []
                if inAttribute { XMLWriter.appendEscapedAttribute(sample, to: &appended) } else { XMLWriter.appendEscapedText(sample, to: &appended) }
                var copy = sample
                let (written, short) = copy.withUTF8 { bytes in
                    var short: Int?? = .none
                    let written = [UInt8](unsafeUninitializedCapacity: appended.count + 1) { buffer, initialized in
                        initialized = XMLWriter.writeEscaped(utf8: bytes, inAttribute: inAttribute,
                                                             to: UnsafeMutableBufferPointer(rebasing: buffer[0..<appended.count])) ?? 0
                        if !appended.isEmpty {
                            short = .some(XMLWriter.writeEscaped(utf8: bytes, inAttribute: inAttribute,
                                                                 to: UnsafeMutableBufferPointer(rebasing: buffer[0..<appended.count - 1])))
                        }
                    }
                    return (written, short)
                }
                let what = "\(sample.unicodeScalars.map { $0.value }), attribute \(inAttribute)"
                #expect(written == appended, "write of \(what)")
                #expect(String(decoding: written, as: UTF8.self) == Self.reference(sample, inAttribute: inAttribute))
                if !appended.isEmpty { #expect(short == .some(nil), "a buffer one byte short for \(what)") }
            }
        }
    }
}

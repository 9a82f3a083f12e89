import CCS
import Testing
import XMLStream

/// The byte-buffer JSON writer (event lines, the downstream JSON) writes exactly the text of the `String`
/// writer, and a record's stanza bytes are the stanza text.
@Suite struct JSONBytesWriterTests {
    static let strings: [String] = {
        var strings = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        strings += ["", "plain", "quote \" backslash \\ slash /", "\r\n\t\u{8}\u{C}", "é", "😀", "\u{FFFD}", "\u{FFFE}", "\u{FFFF}",
                    "\u{F000}", "\u{FEFF}", "a\u{FFFE}b\u{FFFF}c", "\u{0}\u{1F}\u{7F}", "end\u{FFFF}", String(repeating: "x\"", count: 300)]
        return strings
    }()

    @Test func stringsMatchTheStringWriter() {
        for string in Self.strings {
            var text = "["
            JSONValue.writeString(string, to: &text)
            var bytes: [UInt8] = Array("[".utf8)
            JSONValue.writeString(string, to: &bytes)
            #expect(bytes == Array(text.utf8), "string \(string.unicodeScalars.map { $0.value })")
        }
    }

    @Test func valuesMatchTheStringWriter() {
        let values: [JSONValue] = [
            .null, .bool(true), .bool(false), .int(0), .int(-1), .int(7), .int(Int64.max), .int(Int64.min),
            .double(0), .double(-0.0), .double(1.5), .double(1e15), .double(123456789012345), .double(-2.5e-7), .double(.infinity),
            .number("18446744073709551617"), .number("1E2"), .string("s\u{FFFF}"),
            .array([]), .array([.int(1), .string("two"), .null, .array([.bool(true)])]),
            .object([:]), .object(["b": .int(2), "a": .object(["z": .string("<&>"), "y": .array([.double(0.25)])]), "\u{FFFE}": .null]),
        ]
        for value in values {
            var text = ""
            value.write(to: &text)
            var bytes: [UInt8] = []
            value.write(to: &bytes)
            #expect(bytes == Array(text.utf8), "value \(text)")
        }
    }

    @Test func decimalIntegersMatchString() {
        for number: Int64 in [0, 1, 9, 10, -9, -10, 99_999, 1_000_000_007, Int64.max, Int64.min, Int64.min + 1] {
            var bytes: [UInt8] = []
            JSONValue.append(number, to: &bytes)
            #expect(bytes == Array(String(number).utf8))
        }
    }

    @Test func aRecordsStanzaBytesAreTheStanzaText() {
        for (messageID, json) in [("m-1", #"{"to":"tok","message_id":"m-1","data":{"a":"<&>\"'"}}"#),
                                  ("q\"<&>'\t\n\r", "{\"to\":\"t\u{FFFF}\",\"x\":\"\u{1}\r\"}"),
                                  ("plain", #"{"to":"tok"}"#), ("\u{FFFE}", "\u{FFFE}\u{FFFF}<\u{EFBF}"), ("é😀", ""),
                                  (String(repeating: "<&", count: 50), String(repeating: "\u{1}>é", count: 300)),
                                  // Escapes that need exactly the room a stanza is written with in place, and one byte more.
                                  ("m", "{" + String(repeating: "&", count: 8) + "}"), ("m", "{" + String(repeating: "&", count: 8) + "<}"),
                                  (String(repeating: "&", count: 8), "{}"), (String(repeating: "&", count: 7), "{<}"),
                                  (String(repeating: "'", count: 7), "{\u{FFFF}}")] {
            let record = MessageRecord(messageID: messageID, json: json, to: "tok", rateKey: "tok", acceptedAt: 0,
                                       acceptedAtUnixMillis: 0, timeToLive: 60)
            // The stanza as the String escapes write it.
            var text = "<message id=\""
            XMLWriter.appendEscapedAttribute(messageID, to: &text)
            text += "\"><gcm xmlns=\"google:mobile:data\">"
            XMLWriter.appendEscapedText(json, to: &text)
            text += "</gcm></message>"
            #expect(record.stanza == Array(text.utf8))
            #expect(CCSStanza.downstream(messageID: messageID, json: json) == text)
        }
    }
}

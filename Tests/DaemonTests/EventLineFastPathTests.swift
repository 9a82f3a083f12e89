import CCS
import Foundation
import Store
import TestSupport
import Testing
@testable import Daemon

/// The event encoder's fast path for plain strings (`EventLine.writeString`) against the one rule for
/// escaping (`JSONValue.writeString`), and the reusable-buffer and whole-commit paths against the per-event ones.
@Suite struct EventLineFastPathTests {
    static func slow(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "x")]
        JSONValue.writeString(text, to: &out)
        return out
    }

    static func fast(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "x")]
        EventLine.writeString(text, to: &out)
        return out
    }

    /// Every string, key or value, in the downstream corpus (read from Tests/Corpus).
    static func corpusStrings() throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Corpus/downstream.jsonl")
        let text = try String(contentsOf: url, encoding: .utf8)
        var strings: [String] = []
        func collect(_ value: JSONValue) {
            switch value {
            case .string(let string): strings.append(string)
            case .array(let values): values.forEach(collect)
            case .object(let members):
                for (key, member) in members {
                    strings.append(key)
                    collect(member)
                }
            default: break
            }
        }
        for line in text.split(separator: "\n") {
            strings.append(String(line))
            if let value = try? JSONValue.parse(String(line)) { collect(value) }
        }
        return strings
    }

    @Test func agreesWithTheEscapingRuleOnTheCorpus() throws {
        let strings = try Self.corpusStrings()
        #expect(strings.count > 100)
        for text in strings {
            #expect(Self.fast(text) == Self.slow(text), "\(text.debugDescription)")
        }
    }

    /// Each byte value 0x00…0x7F, and characters that need care (non-ASCII, U+FFFE, U+FFFF, U+F000), at
    /// every position of strings of 1…20 bytes: the eight-byte words and the tail both see each one.
    @Test func agreesWithTheEscapingRuleOnEveryCharacterAtEveryPosition() {
        var specials = (0..<0x80).map { String(UnicodeScalar(UInt8($0))) }
        specials += ["é", "\u{FFFE}", "\u{FFFF}", "\u{F000}", "😀", "\u{2028}"]
        for length in 1...20 {
            for position in 0..<length {
                for special in specials {
                    var text = String(repeating: "a", count: position) + special
                    text += String(repeating: "b", count: length - position - 1)
                    #expect(Self.fast(text) == Self.slow(text), "\(text.debugDescription)")
                }
            }
        }
        #expect(Self.fast("") == Self.slow(""))
    }

    @Test func plainIsOnlyTextThatNeedsNoEscape() {
        for byte in UInt8(0)...UInt8(255) {
            for length in [1, 8, 9, 16, 17] {
                var bytes = [UInt8](repeating: UInt8(ascii: "k"), count: length)
                bytes[length - 1] = byte
                let plain = bytes.withUnsafeBufferPointer { EventLine.isPlain($0) }
                let needsNothing = byte >= 0x20 && byte < 0x80 && byte != 0x22 && byte != 0x5C
                #expect(plain == needsNothing, "byte \(byte) in \(length)")
                guard length > 1 else { continue }
                bytes[0] = byte
                bytes[length - 1] = UInt8(ascii: "k")
                let plainFirst = bytes.withUnsafeBufferPointer { EventLine.isPlain($0) }
                #expect(plainFirst == needsNothing, "byte \(byte) first of \(length)")
            }
        }
    }

    /// A deterministic stream of strings over an alphabet full of escapes: fast and slow paths agree.
    @Test func agreesWithTheEscapingRuleOnGeneratedStrings() {
        let alphabet: [String] = ["a", "Z", "0", "-", ":", "_", " ", "\"", "\\", "\n", "\r", "\t", "\u{01}", "\u{1F}",
                                  "\u{7F}", "é", "\u{FFFE}", "\u{FFFF}", "\u{EFFF}", "😀", "/", "<", "&"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % 1_000_003)
        }
        for _ in 0..<5_000 {
            let length = next() % 40
            let text = (0..<length).map { _ in alphabet[next() % alphabet.count] }.joined()
            #expect(Self.fast(text) == Self.slow(text), "\(text.debugDescription)")
        }
    }

    static let events: [DispatcherEvent] = [
        .accepted(messageID: "m-1"),
        .acked(messageID: "m-\"2\"", to: "tok\u{01}en", canonicalRegistrationID: "new", group: nil),
        .acked(messageID: "m-3", to: "tok", canonicalRegistrationID: nil,
               group: GroupOutcome(success: 1, failure: 1, failedRegistrationIDs: ["x"])),
        .nacked(messageID: "m-4", error: "BAD_REGISTRATION", description: nil, final: true, invalidToken: true, group: nil),
        .rejected(messageID: nil, field: "to", error: "is missing", line: 3, retryable: true,
                  outcome: "{\"event\":\"acked\",\"message_id\":\"m\"}"),
        .expired(messageID: "é\u{FFFF}"),
        .connection(id: 2, endpoint: Endpoint(host: "h", port: 5235), state: .closed, reason: "lost"),
    ]

    @Test func appendingToABufferWritesTheSameObjectAfterWhatItHolds() {
        var buffer = Array("prefix".utf8)
        for event in Self.events {
            let before = buffer
            event.appendJSONObject(to: &buffer)
            #expect(Array(buffer[..<before.count]) == before)
            #expect(String(decoding: buffer[before.count...], as: UTF8.self) == event.jsonObject())
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// A commit's lines handed over in one piece reach a sink line by line (the default) and a file
    /// byte for byte as when appended one at a time.
    @Test func linesOfACommitInOnePieceAreTheLinesOneByOne() throws {
        let lines = Self.events.enumerated().map { index, event in
            CCSDaemon.eventLine(JournaledEvent(seq: Int64(index + 1), timeUnixMillis: 1_700_000_000_000, line: event.jsonObject()))
        }
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for line in lines {
            bytes += Array(line.utf8)
            ends.append(bytes.count)
        }
        let memory = MemoryOutlet()
        memory.append(utf8Lines: bytes, lineEnds: ends)
        #expect(memory.flush())
        #expect(memory.lines == lines)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("event-lines-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let whole = directory.appendingPathComponent("whole.jsonl").path
        let single = directory.appendingPathComponent("single.jsonl").path
        do {
            let outlet = try EventOutlet(path: whole)
            outlet.append(utf8Lines: bytes, lineEnds: ends)
            #expect(outlet.flush())
            let other = try EventOutlet(path: single)
            for line in lines { other.append(line) }
            #expect(other.flush())
        }
        #expect(try String(contentsOfFile: whole, encoding: .utf8) == lines.joined())
        #expect(try String(contentsOfFile: single, encoding: .utf8) == lines.joined())
    }

    /// The outlet takes a commit's lines as they are when nothing is buffered, and appends them after what
    /// is: single lines and commits in any order, flushed or not in between, reach the file in order.
    @Test func commitLinesAfterBufferedLinesKeepTheOrder() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("event-order-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("events.jsonl").path
        var expected = ""
        do {
            let outlet = try EventOutlet(path: path)
            func commit(_ lines: [String]) {
                let bytes = Array(lines.joined().utf8)
                outlet.append(utf8Lines: bytes, lineEnds: [bytes.count])
                expected += lines.joined()
            }
            commit(["{\"a\":1}\n", "{\"a\":2}\n"])                  // into an empty buffer
            outlet.append("{\"b\":1}\n")
            expected += "{\"b\":1}\n"
            commit(["{\"a\":3}\n"])                                    // after a buffered line
            commit(["{\"a\":4}\n"])                                    // after a buffered commit
            #expect(outlet.flush())
            commit(["{\"a\":5}\n"])                                    // empty again after the flush
            outlet.append(utf8: Array("{\"c\":1}\n".utf8))
            expected += "{\"c\":1}\n"
            #expect(outlet.flush())
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == expected)
    }

    static func isPlain(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { EventLine.isPlain($0) }
    }

    /// Event text through the general writer only.
    static func generic(_ event: DispatcherEvent) -> String {
        var bytes: [UInt8] = []
        event.appendJSONObject(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `accepted` and plain `acked` written straight into a string: the same text as the general writer,
    /// for plain strings; nil (the general writer) for strings with escapes and for other shapes.
    @Test func plainObjectsAreTheGeneralWritersText() {
        let strings = ["", "m", "b-1", "message-id-of-sixteen", "bench-token-7-APA91bHPRgkFLJu4x", "a b:c/d_e~\u{7F}",
                       "q\"uote", "back\\slash", "new\nline", "\u{01}", "é", "\u{FFFF}", "😀", "/topics/news"]
        for first in strings {
            for second in strings {
                let cases: [(DispatcherEvent, plain: Bool)] = [
                    (.accepted(messageID: first), Self.isPlain(first)),
                    (.acked(messageID: first, to: second, canonicalRegistrationID: nil, group: nil),
                     Self.isPlain(first) && Self.isPlain(second)),
                ]
                for (event, plain) in cases {
                    let text = event.plainJSONObject()
                    #expect((text != nil) == plain, "\(event)")
                    if let text { #expect(text == Self.generic(event)) }
                    #expect(event.jsonObject() == Self.generic(event))
                }
            }
            for event in [DispatcherEvent.acked(messageID: first, to: "t", canonicalRegistrationID: "c", group: nil),
                          .acked(messageID: first, to: "t", canonicalRegistrationID: nil,
                                 group: GroupOutcome(success: 1, failure: 0, failedRegistrationIDs: [])),
                          .expired(messageID: first)] {
                #expect(event.plainJSONObject() == nil)
                #expect(event.jsonObject() == Self.generic(event))
            }
        }
    }

    /// `accepted` and plain `acked` kept as their pieces (`EventText`): the same text, length and events-file
    /// line as the general writer's string, and equal to it as a text; nil where a string needs an escape.
    @Test func plainEventTextsAreTheGeneralWritersText() {
        let strings = ["", "m", "b-1", "message-id-of-sixteen", "bench-token-7-APA91bHPRgkFLJu4x", "a b:c/d_e~\u{7F}",
                       "q\"uote", "back\\slash", "new\nline", "\u{01}", "é", "😀", "/topics/news"]
        let seqs: [Int64] = [0, 7, 123_456_789, Int64.max, Int64.min]
        for first in strings {
            for second in strings {
                for event in [DispatcherEvent.accepted(messageID: first),
                              .acked(messageID: first, to: second, canonicalRegistrationID: nil, group: nil)] {
                    let general = Self.generic(event)
                    let plain = Self.isPlain(first) && (event.isAccepted || Self.isPlain(second))
                    let text = event.plainText()
                    #expect((text != nil) == plain, "\(event)")
                    guard let text else { continue }
                    #expect(text.isPlainEvent)
                    #expect(text.string == general && text.description == general)
                    #expect(text.utf8Count == general.utf8.count)
                    #expect(text == EventText(general) && EventText(general) == text)
                    for seq in seqs {
                        let pieces = JournaledEvent(seq: seq, timeUnixMillis: 1_764_504_000_123, text: text)
                        let whole = JournaledEvent(seq: seq, timeUnixMillis: 1_764_504_000_123, line: general)
                        #expect(CCSDaemon.eventLine(pieces) == Self.reference(whole), "\(event) \(seq)")
                        #expect(Self.reference(whole).utf8.count <= CCSDaemon.eventLineCapacity(pieces))
                    }
                }
            }
        }
        #expect(EventText.accepted(messageID: "a") != EventText.accepted(messageID: "b"))
        #expect(EventText.acked(messageID: "a", to: "t") != EventText("{\"event\":\"acked\",\"message_id\":\"a\",\"to\":\"u\"}"))
        #expect(!EventText("{}").isPlainEvent)
    }

    /// The events-file line as first written with `String` (trailing spaces and newlines dropped, `seq` and
    /// `time` inserted before the closing brace, a text that is no object written as it is).
    static func reference(_ event: JournaledEvent) -> String {
        var line = event.line
        while line.last == "\n" || line.last == " " { line.removeLast() }
        guard line.last == "}" else { return line + "\n" }
        line.removeLast()
        let separator = line.hasSuffix("{") ? "" : ","
        return line + separator + "\"seq\":\(event.seq),\"time\":\"\(CCSDaemon.rfc3339(unixMillis: event.timeUnixMillis))\"}\n"
    }

    @Test func eventFileLinesAreTheReferenceText() {
        let lines = ["{}", "{\"a\":1}", "{\"a\":1}\n", "{\"a\":1}  \n\n", "{\"a\":1}\r\n", "{\"a\":\"é😀\"} ",
                     "not json", "", "   ", "x}\r\n", "{\"event\":\"acked\",\"message_id\":\"m\",\"to\":\"t\"}"]
        let seqs: [Int64] = [0, 1, 9, 10, 99, 100, 123_456_789, Int64.max, -1, Int64.min]
        for line in lines {
            for seq in seqs {
                let event = JournaledEvent(seq: seq, timeUnixMillis: 1_764_504_000_123, line: line)
                let expected = Self.reference(event)
                #expect(CCSDaemon.eventLine(event) == expected, "\(line.debugDescription) \(seq)")
                #expect(expected.utf8.count <= CCSDaemon.eventLineCapacity(event))
            }
        }
    }
}

private extension DispatcherEvent {
    var isAccepted: Bool { if case .accepted = self { true } else { false } }
}

import CorpusFixtures
import Foundation
import Testing
@testable import CCS

/// The intake shortcut for the common legacy shape (`DownstreamIntake.parseCommonShape`) agrees with the full
/// path on every line: the same message or the same error, and for a message the same JSON text down to the
/// bytes (the text the shortcut wrote from the tokens against the one written from the fields), with or
/// without a message_id assigned afterwards. On the whole corpus and on generated shapes, valid and broken.
@Suite struct IntakeCommonShapeTests {
    static let now = Date(timeIntervalSince1970: 1_764_500_000)

    /// Compares the shortcut with the full path on `line`; true when the shortcut took it.
    @discardableResult
    static func expectAgreement(_ line: Data, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let fast = DownstreamIntake.parse(line: line, now: now)
        let full = DownstreamIntake.commonShapeOffSwitch.withValue(true) { DownstreamIntake.parse(line: line, now: now) }
        #expect(fast == full, "\(comment)", sourceLocation: sourceLocation)
        #expect(DownstreamIntake.parse(utf8: [UInt8](line), now: now) == full, "\(comment): bytes", sourceLocation: sourceLocation)
        guard case .success(let message) = fast, case .success(let reference) = full else { return false }
        #expect(reference.encoded == nil, "\(comment): the full path took the shortcut", sourceLocation: sourceLocation)
        #expect(message.jsonUTF8() == reference.jsonUTF8(),
                "\(comment): \(message.jsonString()) vs \(reference.jsonString())", sourceLocation: sourceLocation)
        let assigned = message.withMessageID("ccsd-x-1"), assignedReference = reference.withMessageID("ccsd-x-1")
        #expect(assigned == assignedReference, "\(comment): assigned", sourceLocation: sourceLocation)
        #expect(assigned.jsonUTF8() == assignedReference.jsonUTF8(),
                "\(comment): assigned: \(assigned.jsonString()) vs \(assignedReference.jsonString())", sourceLocation: sourceLocation)
        // A field changed afterwards: the text is dropped, `data` (kept in the text until then) is not.
        var changed = message, changedReference = reference
        changed.dryRun = !(message.dryRun ?? false)
        changedReference.dryRun = !(reference.dryRun ?? false)
        #expect(changed.encoded == nil && changed.data == reference.data, "\(comment): changed", sourceLocation: sourceLocation)
        #expect(changed.jsonUTF8() == changedReference.jsonUTF8(), "\(comment): changed", sourceLocation: sourceLocation)
        return message.encoded != nil
    }

    @Test func corpusLinesAgree() throws {
        let cases = try DownstreamCorpus.loaded.get()
        var taken = 0
        for entry in cases where Self.expectAgreement(Data(entry.line.utf8), entry.name) { taken += 1 }
        #expect(taken >= 5, "the shortcut took \(taken) corpus lines")
    }

    /// The benchmark's message shape (scripts/perf) takes the shortcut, and a changed field drops its text.
    @Test func benchmarkShapeTakesTheShortcut() throws {
        let line = #"{"to":"bench-token-7-APA91bHPRgkFLJu4x","message_id":"b-7","data":{"score":"7","text":"benchmark payload <&>"},"time_to_live":600}"#
        #expect(Self.expectAgreement(Data(line.utf8), "benchmark"))
        var message = try DownstreamIntake.parse(line: line, now: Self.now).get()
        message.data?["score"] = "8"
        #expect(message.encoded == nil)
        #expect(message.jsonString() == #"{"to":"bench-token-7-APA91bHPRgkFLJu4x","message_id":"b-7","time_to_live":600,"data":{"score":"8","text":"benchmark payload <&>"}}"#)
    }

    /// The shortcut writes its text into room sized from the line (`DownstreamIntake.Writer`): strings whose
    /// escapes grow when written back (`\b` and `\f` come back as six-byte `\u0008` `\u000c`, a raw U+FFFF as
    /// `\uffff`) still fit, in every string member and in `data` keys and values, and give the full path's text.
    @Test func escapesThatGrowWhenWrittenBackAgree() {
        let grows = String(repeating: #"\b\f"#, count: 40), wide = String(repeating: "\u{FFFF}", count: 30)
        let lines = [
            #"{"to":"tok-1","message_id":"m-1","collapse_key":"\#(grows)","data":{"\#(grows)":"\#(grows)"}}"#,
            #"{"condition":"'a' in topics","message_id":"\#(wide)","data":{"k":"\#(wide)","\#(grows)x":"\#(wide)"}}"#,
            #"{"to":"tok-2","collapse_key":"\#(grows)\#(wide)","time_to_live":2419200,"data":{"a":"\#(grows)"}}"#,
        ]
        for (index, line) in lines.enumerated() {
            #expect(Self.expectAgreement(Data(line.utf8), "line \(index)"), "line \(index) took the shortcut")
        }
    }

    /// Texts around one generated message: as written, pretty-printed by Foundation, and with one member
    /// changed to each unusual or broken value the shortcut must leave to the full path.
    static func variants(of message: DownstreamMessage, _ generator: inout MessageGenerator) -> [(String, String)] {
        let text = message.jsonString()
        var variants = [("as written", text)]
        var object = message.jsonValue().objectValue!
        if let any = try? JSONSerialization.jsonObject(with: Data(text.utf8)),
           let pretty = try? JSONSerialization.data(withJSONObject: any, options: [.prettyPrinted]) {
            variants.append(("pretty", String(decoding: pretty, as: UTF8.self)))
        }
        func with(_ name: String, _ key: String, _ value: JSONValue?) {
            var changed = object
            changed[key] = value
            variants.append((name, JSONValue.object(changed).serialized()))
        }
        func raw(_ name: String, _ insertion: String) {  // a member written before the others, as text
            variants.append((name, "{" + insertion + "," + text.dropFirst()))
        }
        let members: [(String, String, JSONValue?)] = [
            ("ttl float", "time_to_live", .double(600.5)), ("ttl over", "time_to_live", .int(2_419_201)),
            ("ttl negative", "time_to_live", .int(-1)), ("ttl string", "time_to_live", .string("600")),
            ("ttl huge", "time_to_live", .number("123456789012345678901234567890")),
            ("id empty", "message_id", .string("")), ("id control", "message_id", .string("a\u{1}b")),
            ("id del", "message_id", .string("a\u{7F}")), ("id number", "message_id", .int(7)), ("id absent", "message_id", nil),
            ("priority upper", "priority", .string("HIGH")), ("priority int", "priority", .int(10)),
            ("flag string", "dry_run", .string("true")), ("flag int", "content_available", .int(1)),
            ("flag null", "mutable_content", .null), ("collapse int", "collapse_key", .int(1)),
            ("to empty", "to", .string("")), ("to topics no slash", "to", .string("topics/a")),
            ("to topic bad", "to", .string("/topics/a b")), ("to space", "to", .string("abc def")),
            ("to int", "to", .int(1)), ("both targets", "condition", .string("'a' in topics")),
            ("unknown", "ttl", .int(5)), ("multicast", "registration_ids", .array([.string("a")])),
            ("data array", "data", .array([])), ("data string", "data", .string("x")),
            ("data nested", "data", .object(["a": .object(["b": .string("c")])])),
            ("data int", "data", .object(["a": .int(1), "b": .string("c")])), ("data null", "data", .object(["a": .null])),
            ("data reserved from", "data", .object(["from": .string("x")])),
            ("data reserved google", "data", .object(["z": .string(""), "google.sent": .string("x")])),
            ("data reserved gcm", "data", .object(["gcmx": .string("x")])),
            ("data type", "data", .object(["message_type": .string("x")])),
            ("data non-ASCII key", "data", .object(["é": .string("x"), "e": .string("y")])),
            ("data kelvin", "data", .object(["\u{212A}": .string("x")])),
            ("data keys order", "data", .object(["b": .string("1"), "a": .string("2"), "ab": .string("3"), "A": .string(""), "": .string("e")])),
            ("notification", "notification", .object(["title": .string("t")])),
        ]
        for (name, key, value) in members { with(name, key, value) }
        if message.messageID != nil { object["message_id"] = nil }
        with("no target", "to", nil)
        raw("repeated to", #""to":"abc""#)
        raw("repeated id", #""message_id":"again""#)
        raw("repeated data key", #""data":{"k":"1","k":"2"}"#)
        raw("escaped key", #""t\u006f":"abc""#)
        variants.append(("v1", #"{"message":"# + text + "}"))
        // Payloads around both limits, with U+FFFE (counted 3 bytes, written as a 6-byte escape) or not.
        for limit in [DownstreamMessage.maximumPayloadBytes, DownstreamMessage.maximumTopicPayloadBytes] {
            for delta in [-12, -9, -1, 0, 1, 2] {
                let filler = limit + delta - #"{"p":""}"#.utf8.count
                with("payload \(limit)\(delta)", "data", .object(["p": .string(String(repeating: "x", count: filler))]))
                with("payload \(limit)\(delta) FFFE", "data", .object(["p": .string("\u{FFFE}" + String(repeating: "x", count: filler - 3))]))
            }
        }
        _ = generator.chance(0)
        return variants
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func generatedShapesAgree(seed: UInt64) {
        var generator = MessageGenerator(rng: SeededGenerator(seed: seed))
        var taken = 0, lines = 0
        for index in 0..<60 {
            var message = generator.message()
            if index % 2 == 0 { message.notification = nil }  // the shape the shortcut takes
            for (name, text) in Self.variants(of: message, &generator) {
                lines += 1
                if Self.expectAgreement(Data(text.utf8), "seed \(seed) #\(index) \(name): \(text.prefix(300))") { taken += 1 }
            }
        }
        #expect(taken * 10 >= lines, "the shortcut took \(taken) of \(lines) lines")
    }
}

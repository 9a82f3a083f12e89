import CorpusFixtures
import Foundation
import JSONReference
import Testing
import XMLStream
@testable import CCS

/// The JSON front door (simdjson; jansson for the reason a text is refused) gives what Foundation's
/// `JSONSerialization`, the path ccsd parsed by before (`FoundationJSON`), gave: on the whole downstream
/// corpus, and on hostile texts, through `JSONValue.parse`, intake validation and inbound classification;
/// except where Foundation changed a number or read a text that is not UTF-8 (`foundationQuirks`), and for
/// the words of an error. (The emulator's stanza shapes are checked in IntegrationTests.)
@Suite struct JSONFrontDoorTests {
    /// `a` and `b` are the same down to the bytes: strings by UTF-8 (not canonical equivalence), doubles by bits.
    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.number(let x), .number(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.object(let x), .object(let y)):
            let xs = x.map { (Array($0.key.utf8), $0.value) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
            let ys = y.map { (Array($0.key.utf8), $0.value) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
            return xs.count == ys.count && zip(xs, ys).allSatisfy { $0.0 == $1.0 && identical($0.1, $1.1) }
        default: return false
        }
    }

    static func parsed(_ data: Data) -> Result<JSONValue, JSONValue.ParseError> {
        Result { () throws(JSONValue.ParseError) in try JSONValue.parse(data) }
    }

    static func reference<T>(_ body: () throws -> T) rethrows -> T {
        try FoundationJSON.withReference { try body() }
    }

    /// Texts Foundation read otherwise, with what the door reads (nil: refuses). Foundation kept 38 digits of a
    /// long number and read a number below the smallest Double as 0; it read UTF-16 texts, which are not JSON
    /// between systems (RFC 8259 §8.1).
    static let foundationQuirks: [[UInt8]: JSONValue?] = [
        Array(#"{"n":123456789012345678901234567890123456789012}"#.utf8): .object(["n": .number("123456789012345678901234567890123456789012")]),
        Array(#"{"n":1e-400}"#.utf8): .object(["n": .number("1e-400")]),
        [0xFF, 0xFE] + Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }: .none,
        Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }: .none,
    ]

    /// The value (or refusal) of `JSONValue.parse`, intake validation and inbound classification of `data`,
    /// each compared with Foundation alone; errors by their kind, field and message_id, not their words.
    static func expectSame(_ data: Data, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let now = Date(timeIntervalSince1970: 1_764_500_000)
        let front = parsed(data)
        let old = reference { parsed(data) }
        if let quirk = foundationQuirks[Array(data)] {
            #expect((try? front.get()) == quirk, "\(comment): \(front)", sourceLocation: sourceLocation)
            #expect((try? old.get()) != quirk, "\(comment): Foundation reads it as the door does now", sourceLocation: sourceLocation)
            return
        }
        switch (front, old) {
        case (.success(let x), .success(let y)):
            #expect(identical(x, y), "\(comment): \(x) vs Foundation \(y)", sourceLocation: sourceLocation)
        case (.failure(let x), .failure(let y)):
            #expect(x.message == JSONNesting.rule ? y == x : x.message.hasPrefix("not valid JSON") && x.offset != nil,
                    "\(comment): \(x) vs Foundation \(y)", sourceLocation: sourceLocation)
        default:
            #expect(Bool(false), "\(comment): \(front) vs Foundation \(old)", sourceLocation: sourceLocation)
        }
        let intake = DownstreamIntake.parse(line: data, now: now).mapError(Self.withoutReason)
        #expect(intake == reference { DownstreamIntake.parse(line: data, now: now) }.mapError(Self.withoutReason),
                "\(comment): intake", sourceLocation: sourceLocation)
        if let text = String(validating: data, as: UTF8.self) {
            let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                                    children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: text)])
            let inbound = Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }.mapError(FoundationJSON.withoutParserWords)
            let oldInbound = reference { Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) } }
                .mapError(FoundationJSON.withoutParserWords)
            #expect(inbound == oldInbound, "\(comment): inbound", sourceLocation: sourceLocation)
        }
    }

    static func withoutReason(_ error: ValidationError) -> ValidationError {
        guard error.rule.contains("not valid JSON") else { return error }
        var error = error
        error.rule = FoundationJSON.withoutParserWords(error.rule)
        error.field = ""  // found from the parser's position
        return error
    }


    @Test(arguments: DownstreamCorpus.cases)
    func corpusLineReadsAsBefore(_ corpusCase: CorpusCase) {
        Self.expectSame(Data(corpusCase.line.utf8), corpusCase.description)
    }

    /// Without this, the door could decline everything and still pass the comparisons.
    @Test func corpusObjectsAreReadBySimdjson() {
        for corpusCase in DownstreamCorpus.cases where corpusCase.line.hasPrefix("{") {
            let data = Data(corpusCase.line.utf8)
            guard (try? FoundationJSON.parse(data)) != nil, !corpusCase.line.contains("\\u") else { continue }
            let value = data.withUnsafeBytes { JSONFrontDoor.parseWithLibrary($0) }
            #expect(value != nil, "\(corpusCase)")
        }
    }

    static let hostile: [String] = {
        var texts = [
            // Lone and paired surrogates.
            #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, #"{"a":"\ud83d\ude00"}"#, #"{"a":"\ud83d\u0041"}"#,
            #"{"message_id":"\ud83d","from":"d"}"#, #"{"message_type":"ack","message_id":"m-\udfff"}"#,
            #"{"message_type":"receipt","message_id":"dr2:\ud800","from":"gcm.googleapis.com"}"#,
            // Numbers.
            #"{"n":18446744073709551617}"#, #"{"n":1e400}"#, #"{"n":-1e400}"#, #"{"n":9223372036854775807}"#,
            #"{"n":9223372036854775808}"#, #"{"n":-9223372036854775808}"#, #"{"n":-9223372036854775809}"#,
            #"{"n":123456789012345678901234567890123456789012}"#, #"{"n":-0}"#, #"{"n":1.0}"#, #"{"n":1E2}"#,
            #"{"n":2.50e1}"#, #"{"n":0.1}"#, #"{"n":1e-400}"#, #"{"n":01}"#, #"{"n":1.}"#, #"{"n":-}"#, #"{"n":+1}"#,
            #"{"n":.5}"#, #"{"n":1e}"#, "[0,-0,0.0,-0.0,1e0]", #"{"n":999999999999999999}"#,
            #"{"n":1000000000000000000}"#, #"{"n":-999999999999999999}"#, #"{"n":00}"#, #"{"n":1x}"#,
            #"{"n":NaN}"#, #"{"n":Infinity}"#, #"{"to":"t","message_id":"m","time_to_live":2419201.0}"#,
            #"{"message_type":"ack","message_id":"m-1","from":"t","x":01}"#,
            #"{"message_type":"ack","message_id":"m-1","from":"t","x":1e400}"#,
            #"{"message_type":"ack","message_id":"m-1","success":18446744073709551617,"failure":1e400,"failed_registration_ids":["a",5,-0]}"#,
            // Duplicate keys.
            #"{"a":1,"a":2}"#, #"{"message_type":"ack","message_id":"x","message_id":"y"}"#,
            #"{"message_type":"ack","message_type":"nack","message_id":"x"}"#, #"{"a":{"b":1,"b":2}}"#,
            "{\"\\u212Aey\":1,\"Key\":2}", "{\"\u{212A}\":\"k\",\"K\":\"K\"}", "{\"é\":1,\"e\u{301}\":2}",
            "{\"message_type\":\"ack\",\"message_id\":\"m\",\"\\u0066rom\":\"a\",\"from\":\"b\"}",
            // NUL and control characters.
            #"{"a":"\u0000"}"#, "{\"a\":\"\0\"}", "{\"a\":1}\0", "\0{\"a\":1}", "{\"a\":\"\t\"}", "{\"a\":\"\n\"}",
            // Not JSON, or not quite.
            "", " ", "{}", "[]", #"{"a":1} {"b":2}"#, #"{"a":1}x"#, #"{"a":1,}"#, "[1,]", #"{"a":"\x"}"#,
            "\u{FEFF}{\"a\":1}", #""x""#, "1", "null", "true", #"{"a":1"#, #"{"a":"#, "{\"a\":/*c*/1}", "{'a':1}",
            #"{"\u0061":"\/"}"#, #"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#,
            #"{"message_type":5,"message_id":"m","from":"d"}"#, #"{"message_type":"ack","message_id":""}"#,
        ]
        for depth in [1, 63, 64, 65, 100, 511, 512, 513, 1_000] {
            texts.append(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
            texts.append(String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth))
            texts.append(#"{"message_type":"ack","message_id":"m","d":"# + String(repeating: "[", count: depth)
                + String(repeating: "]", count: depth) + "}")
        }
        texts += invalid
        return texts
    }()

    /// Texts that are not JSON (RFC 8259), each broken inside a value ccsd never reads: both paths refuse them.
    static let invalid: [String] = [
        // Trailing commas (Foundation alone accepts them), at every level and with whitespace.
        #"{"sender_id":"123","connections":2,}"#, "[1,]", "[ 1 , ]", "{\"a\":1 ,\n}", "[[],]", "[{},]", #"["a,",]"#,
        #"{"to":"t","message_id":"m","data":{"a":"b",}}"#, #"{"to":"t","message_id":"m","data":{"a":[1,2,]}}"#,
        #"{"message_type":"ack","message_id":"m","from":"t","x":[[1,],2]}"#, #"{"a":{"b":{"c":[{"d":1,}]}}}"#,
        // Missing or doubled commas and colons.
        #"{"a":1 "b":2}"#, "[1 2]", #"{"a":[true false]}"#, #"{"a":1,,"b":2}"#, "[,1]", #"{,"a":1}"#, "[,]", "{,}",
        #"{"a" 1}"#, #"{"a":1:2}"#, "[1:2]", #"{"a":[1],"b"}"#, "{1:2}",
        #"{"to":"t","message_id":"m","data":{"a":"b" "c":"d"}}"#,
        // Content after the root.
        #"{"a":1}}"#, "[1]]", #"{"a":[1,2]] }"#, "[1]\n,", "[1] [2]", #"{"a":1}{}"#,
        #"{"to":"t","message_id":"m"} {"to":"u","message_id":"n"}"#,
        // Bad literals, escapes and numbers nested in values ccsd does not read.
        #"{"to":"t","message_id":"m","data":{"x":tru}}"#, #"{"to":"t","message_id":"m","data":{"x":[nul]}}"#,
        #"{"to":"t","message_id":"m","data":{"x":truex}}"#, #"{"to":"t","message_id":"m","data":{"x":"\q"}}"#,
        #"{"to":"t","message_id":"m","data":{"x":["\u12"]}}"#, #"{"to":"t","message_id":"m","data":{"x":[01]}}"#,
        #"{"to":"t","message_id":"m","data":{"x":{"y":1.}}}"#, #"{"to":"t","message_id":"m","data":{"x":-}}"#,
        #"{"message_type":"ack","message_id":"m","from":"t","x":{"y":[+1,0x10,.5,1e]}}"#,
        #"{"message_type":"ack","message_id":"m","from":"t","x":{"y":NaN}}"#,
    ]

    /// Every invalid text is refused, by the door and by the Foundation path; the door's error has a place.
    @Test func invalidTextsAreRefused() {
        for (index, text) in Self.invalid.enumerated() {
            let data = Data(text.utf8)
            #expect(data.withUnsafeBytes { JSONFrontDoor.parseWithLibrary($0) } == nil, "invalid text \(index): \(text)")
            let front = Self.parsed(data)
            let old = Self.reference { Self.parsed(data) }
            guard case .failure(let error) = front, case .failure = old else {
                Issue.record("invalid text \(index) read: \(text): \(front) / Foundation \(old)")
                continue
            }
            #expect(error.offset != nil && error.message.hasPrefix("not valid JSON: "), "invalid text \(index): \(text): \(error)")
            var string = text
            #expect(JSONFrontDoor.withObject(string) { _ in true } == nil, "invalid text \(index): \(text)")
            string = text
            #expect((try? JSONValue.parse(string)) == nil, "invalid text \(index): \(text)")
        }
        #expect(throws: JSONValue.ParseError(message: "not valid JSON: a trailing comma at byte 34", offset: 34)) {
            try JSONValue.parse(#"{"sender_id":"123","connections":2,}"#)
        }
    }

    @Test func hostileTextsReadAsBefore() {
        for (index, text) in Self.hostile.enumerated() {
            Self.expectSame(Data(text.utf8), "hostile text \(index): \(text.prefix(80))")
        }
    }

    /// Nesting far beyond any limit is declined at `JSONFrontDoor.maxDepth` and refused by Foundation, never a crash.
    @Test func deepNestingIsRefusedWithoutCrashing() {
        for text in [String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000),
                     String(repeating: #"{"a":"#, count: 100_000), String(repeating: "[", count: 100_000)] {
            let data = Data(text.utf8)
            #expect(data.withUnsafeBytes { JSONFrontDoor.parseWithLibrary($0) } == nil)
            let front = Self.parsed(data)
            let old = Self.reference { Self.parsed(data) }
            #expect(front == old)
        }
    }

    @Test func invalidUTF8ReadsAsBefore() {
        let bytes: [[UInt8]] = [
            Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
            Array(#"{"a":""#.utf8) + [0xC0, 0x80] + Array(#""}"#.utf8),
            Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
            Array(#"{"a":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8),
            Array(#"{"message_type":"ack","message_id":"m"#.utf8) + [0xFE] + Array(#""}"#.utf8),
            [0xFF, 0xFE] + Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] },
            Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] },
        ]
        for (index, data) in bytes.enumerated() { Self.expectSame(Data(data), "invalid UTF-8 \(index)") }
    }
}

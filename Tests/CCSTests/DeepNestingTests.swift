import Foundation
import JSONReference
import Testing
import XMLStream
@testable import CCS

/// JSON nested deeper than `JSONNesting.maxDepth` (64) is refused with the rule by one linear pass, before
/// Foundation (whose cost grows faster than the text with its depth) sees it: intake lines, inbound payloads,
/// every text `JSONValue.parse` reads. Depths up to 10^5 fit within the size limits (64 KiB intake lines
/// hold 3·10^4 levels, 1 MiB stanzas 5·10^5).
@Suite struct DeepNestingTests {
    static func arrays(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
    static func objects(_ depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    @Test func sixtyFourLevelsParseAndSixtyFiveAreRefusedWithTheRule() {
        for foundationOnly in [false, true] {
            let body = {
                #expect((try? JSONValue.parse(Self.arrays(64)))?.arrayValue != nil)
                #expect((try? JSONValue.parse(Self.objects(64)))?.objectValue != nil)
                for text in [Self.arrays(65), Self.objects(65), "[" + Self.objects(64) + "]"] {
                    #expect(throws: JSONValue.ParseError(message: "nested deeper than 64 levels of objects and arrays")) {
                        try JSONValue.parse(text)
                    }
                }
            }
            if foundationOnly { FoundationJSON.withReference(body) } else { body() }
        }
    }

    @Test func brokenDeepTextsAreRefusedWithTheRule() {
        // Unclosed, or closed by the wrong bracket: still deeper than the bound, still refused by it.
        for text in [String(repeating: "[", count: 100_000), String(repeating: #"{"a":"#, count: 100_000),
                     String(repeating: "[", count: 100_000) + String(repeating: "}", count: 100_000)] {
            #expect(throws: JSONValue.ParseError(message: JSONNesting.rule)) { try JSONValue.parse(Data(text.utf8)) }
        }
    }

    @Test func bracketsInsideStringsDoNotCount() {
        let brackets = String(repeating: "[{", count: 100)
        let text = #"{"a":"\"\#(brackets)\\","b":1}"#  // an escaped quote, then brackets, then an escaped backslash
        for foundationOnly in [false, true] {
            let body = { #expect((try? JSONValue.parse(text)) == .object(["a": .string("\"" + brackets + "\\"), "b": .int(1)])) }
            if foundationOnly { FoundationJSON.withReference(body) } else { body() }
        }
    }

    @Test func intakeRefusesADeepLineNamingTheRule() {
        // 3·10^4 levels: as deep as a 64 KiB intake line goes.
        let line = #"{"to":"t:APA91b","data":{"k":"v"},"x":"# + Self.arrays(30_000) + "}"
        guard case .failure(let error) = DownstreamIntake.parse(line: Data(line.utf8), now: Date()) else {
            Issue.record("a deep line was accepted")
            return
        }
        #expect(error.code == .notJSONObject)
        #expect(error.field == "")
        #expect(error.rule == "the line is nested deeper than 64 levels of objects and arrays")
        // 65 levels, which Foundation alone would read: refused by the same rule.
        let shallow = #"{"to":"t:APA91b","data":{"k":"v"},"x":"# + Self.arrays(64) + "}"
        guard case .failure(let error65) = DownstreamIntake.parse(line: Data(shallow.utf8), now: Date()) else {
            Issue.record("a line 65 deep was accepted")
            return
        }
        #expect(error65.rule == "the line is nested deeper than 64 levels of objects and arrays")
    }

    func parse(_ json: String) throws -> InboundMessage? {
        try InboundMessage.parse(stanza: InboundMessageTests.message(json))
    }

    @Test(arguments: [100, 100_000])
    func deepUpstreamTakesThePoisonPathAndIsRecovered(depth: Int) throws {
        // message_id and from after the deep member: recovery scans through it.
        let json = #"{"data":{"x":"# + Self.arrays(depth) + #"},"message_id":"u-deep","from":"dev-1","category":"c"}"#
        guard case .upstream(let upstream)? = try parse(json) else { Issue.record("not an upstream"); return }
        #expect(upstream.messageID == "u-deep")
        #expect(upstream.from == "dev-1")
        #expect(upstream.category == "c")
        #expect(upstream.data == .null)
        #expect(upstream.decodeError == "gcm: the payload is nested deeper than 64 levels of objects and arrays")
        #expect(upstream.raw == json)
    }

    @Test func deepAckIsRecoveredAndDeepPayloadWithoutIDsIsRefusedWithTheRule() throws {
        let ack = #"{"message_type":"ack","message_id":"m","from":"t","x":"# + Self.arrays(100_000) + "}"
        #expect(try parse(ack) == .ack(InboundMessage.Ack(messageID: "m", from: "t", group: nil)))
        let anonymous = #"{"x":"# + Self.objects(100_000) + "}"
        #expect {
            try parse(anonymous)
        } throws: { error in
            let error = error as? InboundParseError
            return error?.field == "gcm" && error?.rule.hasPrefix("the payload is nested deeper than 64 levels") == true
        }
    }

    @Test func tokenScanReportsNothingDeeperThanTheBoundAndFindsMembersAfterADeepOne() {
        let deep = Array(Self.arrays(100_000).utf8)
        var deepest = 0
        JSONTokenScan.scan(deep) { token in
            deepest = max(deepest, token.path.count)
            return true
        }
        #expect(deepest == JSONTokenScan.maxDepth)
        let text = Array((#"{"x":"# + Self.arrays(100_000) + #","message_id":"m-9"}"#).utf8)
        #expect(JSONTokenScan.topLevelString("message_id", in: text) == "m-9")
        // The number 64 levels down is reported; one level further it is not.
        var numbers: [JSONTokenScan.Token] = []
        JSONTokenScan.scan(Array(("[" + Self.arrays(63).dropLast(63) + "1" + String(repeating: "]", count: 64)).utf8)) { token in
            if token.kind == .number { numbers.append(token) }
            return true
        }
        #expect(numbers.count == 1 && numbers.first?.path.count == 64)
        numbers = []
        JSONTokenScan.scan(Array(("[" + Self.arrays(64).dropLast(64) + "1" + String(repeating: "]", count: 65)).utf8)) { token in
            if token.kind == .number { numbers.append(token) }
            return true
        }
        #expect(numbers.isEmpty)
    }

    @Test func frontDoorStillDeclinesARepeatedKeyAmongMany() {
        let keys = (0..<1_000).map { #""k\#($0)":0"# }.joined(separator: ",")
        #expect(JSONFrontDoor.withObject("{" + keys + "}") { _ in true } == true)
        #expect(JSONFrontDoor.withObject("{" + keys + #","k500":1}"#) { _ in true } == nil)
        #expect(JSONFrontDoor.withObject(#"{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0,"i":0,"a":1}"#) { _ in true } == nil)
    }
}

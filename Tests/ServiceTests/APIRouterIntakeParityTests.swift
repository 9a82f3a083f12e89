import CCS
import Daemon
import Foundation
import Testing
@testable import Service

/// A message of `POST /v1/messages` is validated exactly like an intake line of `ccsd run`: the body is cut
/// into each message's bytes as written (an array's elements, JSON lines, one object), never parsed as a whole
/// and written again, so numbers keep their written form and one bad number refuses one message only.
@Suite struct APIRouterIntakeParityTests {
    /// Lines whose validation depends on the text as written.
    static let lines = [
        #"{"to":"tok-a","message_id":"p-1","time_to_live":2419201.0}"#,
        #"{"to":"tok-a","message_id":"p-2","time_to_live":1e308}"#,
        #"{"to":"tok-a","message_id":"p-3","data":{"n":1e400}}"#,
        #"{"to":"tok-a","message_id":"p-4","time_to_live":-0}"#,
        #"{"to":"tok-a","message_id":"p-5","time_to_live":1E2}"#,
        #"{"to":"tok-a","message_id":"p-6","time_to_live":123456789012345678901234567890}"#,
        #"{"to":"tok-a","message_id":"p-7\ud800","data":{"k":"\udfff x"}}"#,
        #"{"to":"tok-a","message_id":"p-8","data":{"k":"v [a,\"]\" {b}","n":"2419201.0"}}"#,
        #"{"to":"tok-a","message_id":"p-9","data":{"n":1e308,"m":2419201.0,"z":-0}}"#,
        #"{"to":"tok-a","message_id":"p-10","time_to_live":"600"}"#,
        #"  {"to":"tok-a","message_id":"p-11"}\#t"#,
        #"[1,2]"#,
        #"{"message":{"token":"tok-a","android":{"ttl":"2419201.0s"}},"message_id":"p-13"}"#,
    ]

    /// What `ccsd run` makes of line `number` (its intake path).
    static func run(_ line: String, number: Int) -> String {
        describe(CCSDaemon.IntakeItem.parsing(Array(line.utf8), line: number, now: Date(timeIntervalSince1970: 0)))
    }

    static func describe(_ item: CCSDaemon.IntakeItem) -> String {
        switch item {
        case .message(let message, let line): "accepted line \(line): \(message.jsonString())"
        case .invalid(let line, let messageID, let error):
            "rejected line \(line) \(messageID ?? "-"): field \(error.field) rule \(error.rule) value \(error.value ?? "-") error \(error.description)"
        }
    }

    static func api(_ body: String, jsonLines: Bool) throws -> [String] {
        let messages = try APIRouter.split(Data(body.utf8), jsonLines: jsonLines).get()
        return APIRouter.parse(messages, now: Date(timeIntervalSince1970: 0)).map(describe)
    }

    @Test func anArrayAndJSONLinesGiveWhatTheRunPathGivesForEachLine() throws {
        let expected = Self.lines.enumerated().map { Self.run($1, number: $0 + 1) }
        #expect(try Self.api("[" + Self.lines.joined(separator: ",\n ") + "]", jsonLines: false) == expected)
        #expect(try Self.api(Self.lines.joined(separator: "\n"), jsonLines: true) == expected)
        // One object alone: the body as it is.
        for line in Self.lines where line.hasPrefix("{") {
            #expect(try Self.api(line, jsonLines: false) == [Self.run(line, number: 1)])
        }
    }

    @Test func numbersAreQuotedAsWrittenAndOneUnrepresentableNumberRefusesItsMessageOnly() throws {
        let results = try Self.api("[" + Self.lines.joined(separator: ",") + "]", jsonLines: false)
        #expect(results[0].contains("field time_to_live") && results[0].contains("value 2419201.0 "))
        #expect(results[1].contains("field time_to_live") && results[1].contains("1e308") && !results[1].contains("1e+308"))
        #expect(results[2].hasPrefix("rejected line 3 p-3: field data.n") && results[2].contains("1e400"))
        #expect(results[7].hasPrefix("accepted line 8"))
        let mixed = try Self.api(#"[{"to":"tok-a","message_id":"m-1"},{"to":"tok-a","message_id":"m-2","data":{"n":1e400}},{"to":"tok-a","message_id":"m-3"}]"#,
                                 jsonLines: false)
        #expect(mixed.count == 3)
        #expect(mixed[0].hasPrefix("accepted line 1") && mixed[2].hasPrefix("accepted line 3"))
        #expect(mixed[1].hasPrefix("rejected line 2 m-2: field data.n"))
    }

    @Test func aBodyThatIsNotJSONIsStillRefusedWholeNamingWhere() {
        let cases: [(String, String)] = [
            (#"[{"to":"t"},{"to":}]"#, "message 1 (byte 12) is not JSON"),
            (#"[{"to":"t"} {"to":"u"}]"#, "message 0 (byte 1) is not JSON"),
            (#"[{"to":"t"},]"#, "(byte 12)"),
            (#"[,{"to":"t"}]"#, "(byte 1)"),
            (#"[{"to":"t"}"#, "the array is not closed"),
            (#"[{"to":"t"}] x"#, "text after the array (byte 13)"),
            (#"[{"to":"t"}}]"#, "closes nothing (byte 11)"),
            (#"{"to":"t""#, "the body is not JSON"),
        ]
        for (body, expected) in cases {
            guard case .failure(let error) = APIRouter.split(Data(body.utf8), jsonLines: false) else {
                Issue.record("taken: \(body)")
                continue
            }
            let text = String(decoding: error.response.body, as: UTF8.self)
            #expect(error.response.status == 400 && text.contains("bad_json") && text.contains(expected), "\(body): \(text)")
        }
    }

    @Test func theArrayScanCutsElementsAsWritten() {
        let text = Array(#" [ {"a":"]\"[,"} , 1e400,[1,[2]] ,"x\\"] "#.utf8)
        guard case .elements(let ranges, let end) = JSONArrayElements.scan(text, openingAt: 1) else {
            Issue.record("not scanned")
            return
        }
        #expect(ranges.map { String(decoding: text[$0], as: UTF8.self) } == [#"{"a":"]\"[,"}"#, "1e400", "[1,[2]]", #""x\\""#])
        #expect(end == text.count - 1)
        #expect(JSONArrayElements.scan(Array("[]".utf8), openingAt: 0) == .elements([], end: 2))
        #expect(JSONArrayElements.scan(Array("[1,2,3]".utf8), openingAt: 0, atMost: 2) == .moreThan(2))
    }

    /// A body with a number no Double holds and a real error past it: the error named is the real one, at its
    /// byte in the body as sent.
    @Test func aBodyBrokenPastAnUnrepresentableNumberNamesTheBreak() {
        #expect(APIRouter.notJSON(Data(#"[{"to":"x","a":1e400},{"b":tru}]"#.utf8)) == "not valid JSON: invalid token at byte 27")
        #expect(APIRouter.notJSON(Data(#"[{"to":"x","a":1e400}]"#.utf8)) == nil)
    }
}

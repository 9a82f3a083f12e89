import Foundation
import Testing
@testable import CCS

/// The JSON front door's own rules, which no longer lean on Foundation: numbers keep their value, any value
/// may stand at the top level, a repeated key keeps its last value, and a refused text gets jansson's reason
/// and the byte offset where it breaks, never any of its text.
@Suite struct JSONDoorRulesTests {
    static func library(_ text: String) -> JSONValue? {
        var text = text
        return text.withUTF8 { JSONFrontDoor.parseWithLibrary(UnsafeRawBufferPointer($0)) }
    }

    static func error(_ text: String) -> JSONValue.ParseError? {
        do {
            _ = try JSONValue.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ("0", JSONValue.int(0)), ("-0", .int(0)), ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .number("9223372036854775808")), ("-9223372036854775809", .number("-9223372036854775809")),
        ("123456789012345678901234567890123456789012", .number("123456789012345678901234567890123456789012")),
        ("1.0", .double(1)), ("1E2", .double(100)), ("1e+2", .double(100)), ("2.50e1", .double(25)), ("0.1", .double(0.1)),
        ("0.30000000000000004", .double(0.30000000000000004)), ("5e-324", .double(.leastNonzeroMagnitude)), ("1.5e300", .double(1.5e300)),
        ("3.14159265358979323846", .number("3.14159265358979323846")), ("1e-400", .number("1e-400")),
        ("4.9e-324", .number("4.9e-324")), ("1.00000000000000000001", .number("1.00000000000000000001")),
    ])
    func numbersKeepTheirValue(text: String, value: JSONValue) throws {
        #expect(JSONValue(numberText: text) == value)
        // Through simdjson, nested and at the top level.
        #expect(Self.library("[\(text)]") == .array([value]))
        #expect(Self.library(" \(text) ") == value)
        #expect(try JSONValue.parse(#"{"n":\#(text)}"#) == .object(["n": value]))
    }

    @Test func negativeZeroKeepsItsSign() throws {
        let value = try #require(JSONValue(numberText: "-0.0"))
        guard case .double(let double) = value else {
            Issue.record("\(value)")
            return
        }
        #expect(double.sign == .minus && double == 0)
    }

    @Test(arguments: ["1e400", "-2e308", "01", "1.", "+1", ".5", "1e", "-", "0x10", "1.5.5", "1e5e5", "NaN", "- 1"])
    func notNumbersOrBeyondADoubleAreRefused(text: String) {
        #expect(JSONValue(numberText: text) == nil)
        #expect(Self.library("[\(text)]") == nil)
        #expect((1...text.utf8.count).contains(Self.error("[\(text)]")?.offset ?? -1), "\(text)")
    }

    @Test func exactIntegersAreReadFromTheDigits() {
        #expect(JSONValue.exactInteger(ofNumberText: "2.50e1") == 25)
        #expect(JSONValue.exactInteger(ofNumberText: "1E2") == 100)
        #expect(JSONValue.exactInteger(ofNumberText: "-0") == 0)
        #expect(JSONValue.exactInteger(ofNumberText: "-9223372036854775808") == .min)
        #expect(JSONValue.exactInteger(ofNumberText: "9223372036854775808") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "2.5") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "1e-400") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "1e99999999999") == nil)
    }

    @Test func anyValueStandsAtTheTopLevel() {
        #expect(Self.library(#""x""#) == .string("x"))
        #expect(Self.library(" true\n") == .bool(true))
        #expect(Self.library("false") == .bool(false))
        #expect(Self.library("null") == .null)
        #expect(Self.library("17") == .int(17))
        for text in ["1 2", #""x" 1"#, "truex", "nullx", "true 1", "[1] 2", "{} {}"] {
            #expect(Self.library(text) == nil, "\(text)")
            #expect(Self.error(text)?.offset != nil, "\(text)")
        }
    }

    @Test func aRepeatedKeyKeepsItsLastValue() {
        #expect(Self.library(#"{"a":1,"a":2,"a":3}"#) == .object(["a": .int(3)]))
        #expect(Self.library(#"{"o":{"b":1,"b":[2]}}"#) == .object(["o": .object(["b": .array([.int(2)])])]))
        // The member-by-member view declines it, so that its reader falls back to the whole parse.
        #expect(JSONFrontDoor.withObject(#"{"message_id":"x","message_id":"y"}"#) { _ in true } == nil)
    }

    @Test func errorsGiveTheReasonAndByteButNoneOfTheText() throws {
        let secret = try #require(Self.error(#"{"server_key":AAAAsecretKey}"#))
        #expect(secret == JSONValue.ParseError(message: "not valid JSON: invalid token at byte 14", offset: 14))
        let quoted = try #require(Self.error(#"{"a":"secret" "b"}"#))
        #expect(quoted.offset == 14 && !quoted.message.contains("\"b\"") && !quoted.message.contains("secret"), "\(quoted)")
        let cut = try #require(Self.error(#"{"a":"sec"#))
        #expect(cut == JSONValue.ParseError(message: "not valid JSON: the text ends at byte 9, before its JSON value is complete",
                                            offset: 9, endsEarly: true))
        #expect(Self.error("[1] x") == JSONValue.ParseError(message: "not valid JSON: end of file expected at byte 4", offset: 4))
        #expect(Self.error("{\"a\":\"\t\"}")?.message == "not valid JSON: control character 0x9 at byte 5")
        // A repaired lone surrogate keeps every offset true.
        #expect(Self.error(#"{"a":"\ud800",}"#) == JSONValue.ParseError(message: "not valid JSON: a trailing comma at byte 13", offset: 13))
        #expect(Self.error("[1,\n ]") == JSONValue.ParseError(message: "not valid JSON: a trailing comma at byte 2", offset: 2))
    }

    @Test func aByteOrderMarkIsSkippedAndCounted() throws {
        #expect(try JSONValue.parse("\u{FEFF}{\"a\":1}") == .object(["a": .int(1)]))
        #expect(try JSONValue.parse("\u{FEFF}\"\u{FEFF}x\"") == .string("\u{FEFF}x"))
        #expect(Self.error("\u{FEFF}{\"a\":x}") == JSONValue.ParseError(message: "not valid JSON: invalid token at byte 8", offset: 8))
    }

    @Test func textsInOtherEncodingsThanUTF8AreRefused() {
        let utf16 = Data([0xFF, 0xFE] + Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        #expect((try? JSONValue.parse(utf16)) == nil)
        let latin1 = Data(Array(#"{"a":""#.utf8) + [0xE9] + Array(#""}"#.utf8))
        #expect((try? JSONValue.parse(latin1)) == nil)
    }
}

extension JSONDoorRulesTests {
    /// jansson takes a NUL byte outside a string for the end of the text: the error is the NUL's, not a cut.
    @Test func aNulByteOutsideAStringIsNotACut() {
        #expect(Self.error("\0{\"a\":1}") == JSONValue.ParseError(message: "not valid JSON: invalid token at byte 0", offset: 0))
        #expect(Self.error("{\"a\":1}\0") == JSONValue.ParseError(message: "not valid JSON: end of file expected at byte 7", offset: 7))
        #expect(Self.error("{\"a\":\0") == JSONValue.ParseError(message: "not valid JSON: invalid token at byte 5", offset: 5))
    }
}

/// What an independent attack on the door found: offsets past long tokens, a number ccsd reads blamed for
/// an error elsewhere, a NUL byte after a value, texts cut inside a token, brackets that do not match.
extension JSONDoorRulesTests {
    static let longToken = String(repeating: "A", count: 90)

    static func rejection(_ line: Data) -> ValidationError? {
        if case .failure(let error) = DownstreamIntake.parse(line: line, now: Date()) { return error }
        return nil
    }

    @Test func theOffsetIsTheStartOfATokenLongerThanJanssonQuotes() {
        #expect(Self.error(#"{"to" "\#(Self.longToken)", "message_id": "m-1"}"#)?.offset == 6)
        #expect(Self.error(#"{"to": "m", "message_id" "\#(Self.longToken)"}"#)?.offset == 25)
        let literal = #"{"dry_run": t\#(String(repeating: "r", count: 40))ue}"#
        #expect(Self.error(literal)?.offset == 12)
        // An escaped quote inside the long string does not end it early.
        #expect(Self.error(#"{"to" "\#(Self.longToken)\"\#(Self.longToken)"}"#)?.offset == 6)
        // The key's field is named by intake.
        let line = Data(#"{"to":"x","data":{"k":"v"},"dry_run": t\#(String(repeating: "r", count: 40))ue}"#.utf8)
        #expect(Self.rejection(line)?.field == "dry_run")
    }

    @Test func anIntegerBeyondADoubleIsNotBlamedForAnErrorElsewhere() throws {
        let text = #"{"a": 1\#(String(repeating: "0", count: 400)), "b": tru}"#
        let error = try #require(Self.error(text))
        #expect(error == JSONValue.ParseError(message: "not valid JSON: invalid token at byte 414", offset: 414))
        let intake = try #require(Self.rejection(Data(text.utf8)))
        #expect(intake.field == "b")
        // A number ccsd refuses is named, and once it is set aside, the error past it.
        let both = try #require(Self.rejection(Data(#"{"to":"x","a": 1e400, "b": tru}"#.utf8)))
        #expect(both.field == "b" && both.rule == "the line is not valid JSON: invalid token at byte 27", "\(both)")
    }

    @Test func aNulByteAfterAValueIsNamedAtItsPlace() {
        #expect(Self.error("[true\0]") == JSONValue.ParseError(message: "not valid JSON: a NUL byte outside a string at byte 5", offset: 5))
        #expect(Self.error("1\0") == JSONValue.ParseError(message: "not valid JSON: a NUL byte outside a string at byte 1", offset: 1))
        #expect(Self.error(#"{"ttl": 5"# + "\0}")?.offset == 9)
    }

    @Test(arguments: [#"{"to": "x", "n": t"#, #"{"n": fals"#, "[nul", #"{"n": 1."#, "[-", #"[1e+"#, #"{"a": "b\"#, #"["\u00"#,
                      #"["\u"#, #"{"a": "\\\"#])
    func aTextCutInsideATokenEndsEarly(text: String) {
        #expect(Self.error(text)?.endsEarly == true, "\(text): \(String(describing: Self.error(text)))")
    }

    @Test func aTextCutInsideACharacterEndsEarly() {
        let cases: [([UInt8], Bool)] = [([0xC3], true), ([0xE2, 0x82], true), ([0xF0, 0x9F, 0x98], true), ([0xC3, 0x78], false), ([0xFF], false)]
        for (bytes, cut) in cases {
            do throws(JSONValue.ParseError) {
                _ = try JSONValue.parse(Data(Array(#"{"a": "caf"#.utf8) + bytes))
                Issue.record("\(bytes) read")
            } catch {
                #expect(error.endsEarly == cut, "\(bytes): \(error)")
            }
        }
    }

    @Test(arguments: [#"{"n": tx"#, #"{"n": 1x"#, #"["\q"#, #"{"n": x"#])
    func aBrokenTokenAtTheEndIsNotACut(text: String) {
        #expect(Self.error(text)?.endsEarly == false, "\(text): \(String(describing: Self.error(text)))")
    }

    @Test func aCommaBeforeTheWrongBracketIsNotATrailingComma() {
        #expect(Self.error("[1, }")?.message.contains("trailing comma") == false)
        #expect(Self.error(#"{"a": 1, ]"#)?.message.contains("trailing comma") == false)
        #expect(Self.error(#"{"a": [1, "]"], }"#) == JSONValue.ParseError(message: "not valid JSON: a trailing comma at byte 14", offset: 14))
    }
}

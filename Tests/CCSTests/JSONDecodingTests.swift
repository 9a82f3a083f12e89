import Foundation
import Testing
@testable import CCS

/// What Foundation refuses or bends, and how ccsd reads it: lone surrogate escapes, numbers beyond Int64
/// and Double, written forms of numbers (issue 7 items 4 and 7).
@Suite("JSON decoding")
struct JSONDecodingTests {
    // MARK: Surrogate repair pass

    @Test(arguments: [
        // (input, expected output); nil = nothing to repair.
        (#""\ud83d x""#, #""\uFFFD x""#),                        // high alone, then text
        (#""\udc00""#, #""\uFFFD""#),                            // low alone
        (#""\ude00\ud83d""#, #""\uFFFD\uFFFD""#),                // reversed pair: both lone
        (#""\ud83d\ude00""#, nil),                               // valid pair untouched
        (#""\uD83D\uDE00""#, nil),                               // valid pair, upper-case hex
        (#""\\ud83d""#, nil),                                    // escaped backslash: not an escape
        (#""\\\ud83d""#, #""\\\uFFFD""#),                        // escaped backslash, then a real lone escape
        (#""x\ud83d""#, #""x\uFFFD""#),                          // at the end of the string
        (#""\ud83d"#, #""\uFFFD"#),                              // at the end of the text
        (#""\ud83d\ud83d\ude00""#, #""\uFFFD\ud83d\ude00""#),    // high, then a valid pair
        (#""\ud83d\n""#, #""\uFFFD\n""#),                        // high followed by another escape
        (#""\u00e9\u20ac""#, nil),                               // BMP escapes untouched
        (#""\ud83""#, nil),                                      // not 4 hex digits: left for Foundation to refuse
        (#"{"\udc00":"\\"}"#, #"{"\uFFFD":"\\"}"#),              // in a key
    ] as [(String, String?)])
    func repairRewritesOnlyUnpairedSurrogateEscapes(input: String, expected: String?) {
        let repaired = JSONSurrogateRepair.repaired(Data(input.utf8)).map { String(decoding: $0, as: UTF8.self) }
        #expect(repaired == expected)
    }

    @Test func loneSurrogatesReadAsReplacementCharacter() throws {
        #expect(try JSONValue.parse(#"{"a":"\ud83d x"}"#) == .object(["a": .string("\u{FFFD} x")]))
        #expect(try JSONValue.parse(#"{"a":"\udc00"}"#) == .object(["a": .string("\u{FFFD}")]))
        #expect(try JSONValue.parse(#"{"a":"\ud83d\ude00"}"#) == .object(["a": .string("😀")]))
        #expect(try JSONValue.parse(#"{"a":"\\ud83d"}"#) == .object(["a": .string(#"\ud83d"#)]))
    }

    // MARK: Numbers

    @Test(arguments: [
        ("9223372036854775807", JSONValue.int(.max)),
        ("-9223372036854775808", JSONValue.int(.min)),
        ("9223372036854775808", JSONValue.number("9223372036854775808")),
        ("18446744073709551615", JSONValue.number("18446744073709551615")),
        ("18446744073709551616", JSONValue.number("18446744073709551616")),
        ("-9223372036854775809", JSONValue.number("-9223372036854775809")),
        ("12345678901234567890123", JSONValue.number("12345678901234567890123")),
        ("2419201.0", JSONValue.double(2_419_201)),
        ("1e3", JSONValue.double(1000)),
    ])
    func integersBeyondInt64AreKeptExactly(text: String, expected: JSONValue) throws {
        let value = try JSONValue.parse("[\(text)]")
        #expect(value == .array([expected]))
    }

    @Test func bigIntegersAreWrittenBackVerbatimAndNeverAsInt64() throws {
        let value = try JSONValue.parse(#"{"a":9223372036854775808,"b":-9223372036854775809,"c":18446744073709551616}"#)
        #expect(value.serialized() == #"{"a":9223372036854775808,"b":-9223372036854775809,"c":18446744073709551616}"#)
        #expect(value.serializedUTF8Count == value.serialized().utf8.count)
        #expect(value["a"]?.intValue == nil)
        #expect(value["a"]?.typeName == "number")
    }

    @Test func numberTextSyntax() {
        for good in ["0", "-0", "12", "1.5", "-1.5e+10", "1E3", "18446744073709551616"] { #expect(JSONValue.isNumberText(good), "\(good)") }
        for bad in ["", "-", "01", "1.", ".5", "1e", "+1", "1e+", "NaN", "1 "] { #expect(!JSONValue.isNumberText(bad), "\(bad)") }
    }

    // MARK: Token scan

    @Test func tokenScanFindsNumbersAsWrittenByKeyPath() {
        let text = Array(#"{"s":"a\"b}[{","time_to_live":2419201.0,"n":{"x":[1,{"y":1e3}],"y":-2}}"#.utf8)
        #expect(JSONTokenScan.firstToken(at: ["time_to_live"], in: text)?.text == "2419201.0")
        #expect(JSONTokenScan.firstToken(at: ["n", "y"], in: text)?.text == "-2")
        #expect(JSONTokenScan.firstToken(at: ["y"], in: text) == nil)
        #expect(JSONTokenScan.topLevelString("s", in: text) == #"a"b}[{"#)
    }

    @Test func unrepresentableNumbersReadAsNullAndAreNamed() throws {
        let lenient = try JSONValue.parseReplacingUnrepresentableNumbers(Data(#"{"a":{"b":1e400},"c":-2e308,"d":"1e400"}"#.utf8))
        #expect(lenient.value == .object(["a": .object(["b": .null]), "c": .null, "d": .string("1e400")]))
        #expect(lenient.replaced.map(\.dottedPath) == ["a.b", "c"])
        #expect(lenient.replaced.map(\.text) == ["1e400", "-2e308"])
    }

    @Test func recoversMembersOfTextFoundationRefuses() {
        let text = Array(#"{"message_id":"u-\ud83d","from":"dev","data":{"n":1e400},"x":"#.utf8)
        #expect(JSONTokenScan.topLevelString("message_id", in: text) == "u-\u{FFFD}")
        #expect(JSONTokenScan.topLevelString("from", in: text) == "dev")
        #expect(JSONTokenScan.topLevelString("n", in: text) == nil)
    }
}

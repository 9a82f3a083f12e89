import Foundation
import Testing
@testable import CCS

/// Intake covers target formats and number ranges, and quotes numbers as written (issue 7 items 4 and 7).
@Suite("Intake ranges and targets")
struct IntakeRangeAndTargetTests {
    static let token = "c2LufYNuydk9sgEWl2agE4:APA91baE-Yhc3a-LcBfS83Cedu3QlYJJJbgIQrBc5O_x2A7CzMp1GAawTCEe6OQxLdU"
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    func parse(_ line: String) -> Result<DownstreamMessage, ValidationError> {
        DownstreamIntake.parse(line: line, now: Self.now)
    }

    func rejection(_ line: String) -> ValidationError? {
        if case .failure(let error) = parse(line) { return error }
        return nil
    }

    // MARK: to

    @Test(arguments: [
        "topics/news", "/topic/news", "/Topics/news", "/topics", "topics", "/topics/", "news/x", "a/b",
        "tok en", "tok\u{1}en", "", "tok+en", "tok=", "tokén", "tok.en", String(repeating: "A", count: 4097),
        "/topics/" + String(repeating: "a", count: 901), "/topics/a/b", "/topics/news\n",
        "TOPICS_news", "Topics", "tOpIcS-x",
    ])
    func targetsThatCannotBeATokenOrTopicAreRefusedNamingTheRule(_ to: String) throws {
        let line = JSONValue.object(["to": .string(to), "data": .object(["k": .string("v")])]).serialized()
        let error = try #require(rejection(line), "accepted to=\(to.prefix(40))")
        #expect(error.field == "to")
        #expect([.targetSyntax, .topicName].contains(error.code))
        #expect(error.rule.hasPrefix("must"))
        if to.lowercased().contains("topic") && !to.hasPrefix("/topics/") {
            #expect(error.rule.contains("/topics/"), "a topic without its exact prefix is told so: \(error.rule)")
        }
    }

    @Test(arguments: [
        token, "APA91bGHXQBB_ksDJWJgmWZZI2ALmasP45d8apx1DrCPNBmZf5suvPWK6xNXxW0bShyNOCereMmAaTpeeAhSysHh87xo5ff2wpSO64D-VQtpmyy9",
        "tok-3-APA91b", "x:y-z_0", String(repeating: "A", count: 4096),
        "/topics/industry-tech", "/topics/A-Z_a.z~0%9", "/topics/" + String(repeating: "a", count: 900),
    ])
    func realShapedTargetsAreAccepted(_ to: String) throws {
        let line = JSONValue.object(["to": .string(to), "data": .object(["k": .string("v")])]).serialized()
        let message = try parse(line).get()
        #expect(message.targetKey == to)
    }

    @Test func v1TokenAndTopicFollowTheSameRules() throws {
        let badToken = try #require(rejection(#"{"message":{"token":"topics/news","data":{"k":"v"}}}"#))
        #expect(badToken.field == "message.token")
        let longTopic = try #require(rejection(#"{"message":{"topic":"\#(String(repeating: "a", count: 901))"}}"#))
        #expect(longTopic.field == "message.topic")
        let condition = try #require(rejection(#"{"condition":"'\#(String(repeating: "a", count: 901))' in topics","data":{"k":"v"}}"#))
        #expect(condition.field == "condition")
    }

    // MARK: Numbers: ranges, quoted as written, never wrapped

    @Test(arguments: [
        ("9223372036854775808", "9223372036854775808"),          // wrapped to Int64.min before
        ("18446744073709551616", "18446744073709551616"),        // read as a Double before
        ("-9223372036854775809", "-9223372036854775809"),
        ("2419201.0", "2419201.0"),
        ("2.4192010e6", "2.4192010e6"),
        ("1e400", "1e400"),                                      // not even JSON to Foundation
        ("-1e400", "-1e400"),
    ])
    func timeToLiveOutOfRangeIsQuotedAsWritten(written: String, quoted: String) throws {
        let error = try #require(rejection(#"{"to":"\#(Self.token)","time_to_live":\#(written),"data":{"k":"v"}}"#))
        #expect(error.field == "time_to_live")
        #expect(error.code == .timeToLive)
        #expect(error.value == quoted)
        #expect(error.description == "time_to_live: must be an integer number of seconds from 0 to 2419200 (got \(quoted))")
    }

    @Test func timeToLiveWrittenAsAnIntegralFloatStillCounts() throws {
        let message = try parse(#"{"to":"\#(Self.token)","time_to_live":1e3,"data":{"k":"v"}}"#).get()
        #expect(message.timeToLive == 1000)
        #expect(message.jsonString().contains(#""time_to_live":1000"#))
    }

    @Test(arguments: ["9223372036854775808", "18446744073709551616", "-1", "2147483648"])
    func badgeOutOfRangeIsRefusedNotWrapped(_ written: String) throws {
        let error = try #require(rejection(#"{"to":"\#(Self.token)","notification":{"title":"t","badge":\#(written)}}"#))
        #expect(error.field == "notification.badge")
        #expect(error.code == .numberRange)
        #expect(error.value == written)
    }

    @Test func badgeInRangeGoesOnTheWireUnchanged() throws {
        let message = try parse(#"{"to":"\#(Self.token)","notification":{"title":"t","badge":2147483647}}"#).get()
        #expect(message.jsonString().contains(#""badge":2147483647"#))
    }

    @Test func v1NumbersAreRangeCheckedAndQuotedAsWritten() throws {
        let badge = try #require(rejection(#"{"message":{"token":"\#(Self.token)","apns":{"payload":{"aps":{"badge":9223372036854775808}}}}}"#))
        #expect(badge.field == "message.apns.payload.aps.badge")
        #expect(badge.value == "9223372036854775808")

        let floatBadge = try #require(rejection(#"{"message":{"token":"\#(Self.token)","apns":{"payload":{"aps":{"badge":3.0}}}}}"#))
        #expect(floatBadge.value == "3.0")

        let ttl = try #require(rejection(#"{"message":{"token":"\#(Self.token)","android":{"ttl":"2419201s"}}}"#))
        #expect(ttl.field == "message.android.ttl")
        #expect(ttl.code == .timeToLive)
        #expect(ttl.value == #""2419201s""#)

        let longTTL = try #require(rejection(#"{"message":{"token":"\#(Self.token)","android":{"ttl":"99999999999999999999s"}}}"#))
        #expect(longTTL.code == .timeToLive, "a well-formed duration too long is a range error: \(longTTL)")

        let header = try #require(rejection(#"{"message":{"token":"\#(Self.token)","webpush":{"headers":{"TTL":"99999999999999999999"}}}}"#))
        #expect(header.field == "message.webpush.headers.TTL")
        #expect(header.code == .timeToLive)
        #expect(header.value == #""99999999999999999999""#)

        let expiration = try #require(rejection(#"{"message":{"token":"\#(Self.token)","apns":{"headers":{"apns-expiration":"99999999999999999999"}}}}"#))
        #expect(expiration.code == .timeToLive)
        let signed = try #require(rejection(#"{"message":{"token":"\#(Self.token)","apns":{"headers":{"apns-expiration":"+1700000100"}}}}"#))
        #expect(signed.code == .v1Format)
    }

    @Test func anUnrepresentableNumberNoRuleRefusesIsNamed() throws {
        let error = try #require(rejection(#"{"to":"\#(Self.token)","notification":{"title":"t","badge":1e400}}"#))
        #expect(error.field == "notification.badge")
        #expect(error.value == "1e400")
        let data = try #require(rejection(#"{"to":"\#(Self.token)","data":{"n":1e400}}"#))
        #expect(data.field == "data.n")
        #expect(data.value == "1e400")
    }

    // MARK: Text Foundation refuses

    @Test func loneSurrogatesAreAcceptedAsReplacementCharacters() throws {
        let message = try parse(#"{"to":"\#(Self.token)","message_id":"m-\ud83d","data":{"a":"x\udc00y","b":"\\ud83d"}}"#).get()
        #expect(message.messageID == "m-\u{FFFD}")
        #expect(message.data == ["a": "x\u{FFFD}y", "b": #"\ud83d"#])
    }

    @Test func textThatIsNotJSONSaysWhyAndWhere() throws {
        let truncated = try #require(rejection(#"{"to":"abc","message_id":"m-0118","data":{"a":"b""#))
        #expect(truncated.field == "")
        #expect(truncated.rule.contains("not valid JSON"))
        #expect(truncated.rule.contains("ends before"))
        let bad = try #require(rejection(#"{"to": x}"#))
        #expect(bad.rule.contains("not valid JSON"))
        #expect(bad.rule == "the line is not valid JSON: invalid token at byte 7")
        #expect(bad.field == "to")
        // A raw tab inside a string is not JSON; the error names the field that holds it.
        let tab = try #require(rejection("{\"to\":\"\(Self.token)\",\"data\":{\"text\":\"a\tb\"}}"))
        #expect(tab.field == "data.text")
        #expect(tab.rule.contains("control character"))
        let empty = try #require(rejection(""))
        #expect(empty.rule == "the line is empty, not a JSON object")
        let notUTF8 = try #require(DownstreamIntake.parse(line: Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]), now: Self.now).failure)
        #expect(notUTF8.rule.contains("UTF-8"))
    }
}

private extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}

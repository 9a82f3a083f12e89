import CCS
import Foundation
import Testing

/// Rule-by-rule tests of legacy intake validation (ccs-protocol.md §3).
@Suite("Downstream validation")
struct DownstreamValidationTests {
    static let token = "c2LufYNuydk9sgEWl2agE4:APA91baE-Yhc3a-LcBfS83Cedu3QlYJJJbgIQrBc5O_x2A7CzMp1GAawTCEe6OQxLdU"
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// Parses `{"to": token, …members}` and returns the error, or nil when it was accepted.
    func error(_ members: String, to: String? = token) -> ValidationError? {
        var line = "{"
        if let to { line += "\"to\":\"\(to)\"" + (members.isEmpty ? "" : ",") }
        line += members + "}"
        if case .failure(let error) = DownstreamIntake.parse(line: line, now: Self.now) { return error }
        return nil
    }

    @Test func errorDescriptionNamesFieldRuleAndValue() throws {
        let e = try #require(error(#""time_to_live":"600""#))
        #expect(e.description == #"time_to_live: must be an integer number of seconds from 0 to 2419200 (got "600")"#)
        #expect(e.code == .timeToLive)
        #expect(e.value == #""600""#)
    }

    @Test(arguments: [
        ("[1,2]", "a JSON array"), ("\"text\"", "a JSON string"), ("null", "a JSON null"),
    ] as [(String, String?)])
    func notAJSONObject(line: String, value: String?) throws {
        guard case .failure(let e) = DownstreamIntake.parse(line: line, now: Self.now) else {
            Issue.record("accepted \(line)"); return
        }
        #expect(e.field == "")
        #expect(e.rule == "the line is not a JSON object")
        #expect(e.value == value)
        #expect(e.code == .notJSONObject)
    }

    @Test func bothTargetsIsRefused() throws {
        let e = try #require(error(#""condition":"'a' in topics""#))
        #expect(e.code == .targetCount)
        #expect(e.field == "to")
    }

    @Test(arguments: ["/topics/", "/topics/a b", "/topics/news/x", "/topics/é", "/topic/news", " \(token)", "\(token)\n", ""])
    func badTo(_ to: String) throws {
        let line = JSONValue.object(["to": .string(to)]).serialized()
        guard case .failure(let e) = DownstreamIntake.parse(line: line, now: Self.now) else {
            Issue.record("accepted to=\(to)"); return
        }
        #expect(e.field == "to")
        #expect([.topicName, .targetSyntax].contains(e.code))
    }

    @Test(arguments: ["/topics/a", "/topics/A-Z_a.z~0%9", "/topics/industry-tech", "APA91bGHXQBB_ksDJWJgmWZZI2AL", "x:y-z_0"])
    func goodTo(_ to: String) throws {
        let line = JSONValue.object(["to": .string(to)]).serialized()
        let message = try DownstreamIntake.parse(line: line, now: Self.now).get()
        #expect(message.targetKey == to)
        if to.hasPrefix("/topics/") { #expect(message.target == .topic(String(to.dropFirst(8)))) }
    }

    @Test func tokensAreNeverEchoedInFull() throws {
        let e = try #require(error("", to: Self.token + " "))
        #expect(e.value?.contains(Self.token) == false)
        #expect(e.value == "\"" + shortenedToken(Self.token + " ") + "\"")
        #expect(shortenedToken(Self.token) == "c2LufYNu…(\(Self.token.count))")
        #expect(shortenedToken("short") == "…(5)")
    }

    @Test(arguments: [
        "'A' in topics",
        "'TopicA' in topics && ('TopicB' in topics || 'TopicC' in topics)",
        "('A' in topics||'B' in topics)&&'C' in topics",
        "  ( ( 'a.b~c%d' in topics ) )  ",
        "'A' in topics || 'B' in topics || 'C' in topics",
    ])
    func validConditions(_ condition: String) throws {
        let line = JSONValue.object(["condition": .string(condition)]).serialized()
        let message = try DownstreamIntake.parse(line: line, now: Self.now).get()
        #expect(message.target == .condition(condition))
        #expect(message.isTopicOrCondition)
    }

    @Test(arguments: [
        ("'A' in topics && 'B' in topics && 'C' in topics && 'D' in topics", ValidationError.Code.conditionOperators),
        ("('A' in topics || 'B' in topics) && ('C' in topics || 'D' in topics)", .conditionOperators),
        ("!('A' in topics)", .conditionSyntax),
        ("'A' in topics && !'B' in topics", .conditionSyntax),
        ("\"A\" in topics", .conditionSyntax),
        ("'A' in topic", .conditionSyntax),
        ("'A' in topicsX", .conditionSyntax),
        ("'A B' in topics", .conditionSyntax),
        ("'' in topics", .conditionSyntax),
        ("('A' in topics", .conditionSyntax),
        ("'A' in topics)", .conditionSyntax),
        ("'A' in topics &&", .conditionSyntax),
        ("'A' in topics & 'B' in topics", .conditionSyntax),
        ("", .conditionSyntax),
        (String(repeating: "(", count: 10_000) + "'A' in topics" + String(repeating: ")", count: 10_000), .conditionSyntax),
    ])
    func invalidConditions(_ condition: String, code: ValidationError.Code) throws {
        let line = JSONValue.object(["condition": .string(condition)]).serialized()
        guard case .failure(let e) = DownstreamIntake.parse(line: line, now: Self.now) else {
            Issue.record("accepted \(condition)"); return
        }
        #expect(e.field == "condition")
        #expect(e.code == code, "\(e)")
        #expect((e.value?.count ?? 0) <= 80)
    }

    @Test(arguments: [
        (#""collapse_key":1"#, "collapse_key", ValidationError.Code.type),
        (#""priority":"HIGH""#, "priority", .priority),
        (#""priority":1"#, "priority", .priority),
        (#""mutable_content":1"#, "mutable_content", .type),
        (#""dry_run":"true""#, "dry_run", .type),
        (#""delivery_receipt_requested":null"#, "delivery_receipt_requested", .type),
        (#""time_to_live":600.5"#, "time_to_live", .timeToLive),
        (#""time_to_live":true"#, "time_to_live", .timeToLive),
        (#""message_id":7"#, "message_id", .type),
        (#""message_id":"m\u0001x""#, "message_id", .messageID),
        (#""message_id":"line\nbreak""#, "message_id", .messageID),
        (#""data":[]"#, "data", .type),
        (#""data":{"message_type":"x"}"#, "data.message_type", .reservedDataKey),
        (#""data":{"gcm":"x"}"#, "data.gcm", .reservedDataKey),
        (#""data":{"k":null}"#, "data.k", .dataValue),
        (#""data":{"b":1,"a":true}"#, "data.a", .dataValue),
        (#""notification":"x""#, "notification", .type),
        (#""notification":{"tittle":"x"}"#, "notification.tittle", .unknownField),
        (#""notification":{"title":1}"#, "notification.title", .type),
        (#""notification":{"badge":true}"#, "notification.badge", .type),
        (##""notification":{"color":"#7e55c"}"##, "notification.color", .color),
        (##""notification":{"color":"#7e55cg"}"##, "notification.color", .color),
        (#""notification":{"body_loc_args":[1]}"#, "notification.body_loc_args", .locArgs),
        (#""notification":{"title_loc_args":"x"}"#, "notification.title_loc_args", .locArgs),
        (#""notification":{"title_loc_args":"[1]"}"#, "notification.title_loc_args", .locArgs),
        (#""restricted_package_name":"x""#, "restricted_package_name", .unknownField),
        (#""registration_ids":"x""#, "registration_ids", .multicast),
    ])
    func ruleErrors(members: String, field: String, code: ValidationError.Code) throws {
        let e = try #require(error(members), "accepted \(members)")
        #expect(e.field == field, "\(e)")
        #expect(e.code == code, "\(e)")
    }

    @Test(arguments: [
        #""time_to_live":600.0"#,
        ##""notification":{"body_loc_args":"[\"a\",\"b\"]","title_loc_args":[],"badge":3,"color":"#ABCDEF","image":"https://x/y.png"}"##,
        #""data":{},"notification":{}"#,
        #""data":{"Google":"case-sensitive prefix","fromage":"ok","":"empty key"}"#,
    ])
    func accepted(members: String) throws {
        #expect(error(members) == nil)
    }

    @Test func suggestions() throws {
        #expect(try #require(error(#""priorty":"high""#)).rule == "is not a known field (did you mean priority?)")
        #expect(try #require(error(#""colapse_key":"x""#)).rule == "is not a known field (did you mean collapse_key?)")
        #expect(try #require(error(#""notification":{"bdoy":"x"}"#)).rule == "is not a known field (did you mean body?)")
        #expect(try #require(error(#""wholly_unrelated":1"#)).rule == "is not a known field")
    }

    @Test func firstErrorIsDeterministic() throws {
        // Several broken rules: the fixed order reports the unknown field first, then options in order.
        #expect(try #require(error(#""zzz":1,"aaa":1,"priority":"x""#)).field == "aaa")
        #expect(try #require(error(#""priority":"x","time_to_live":-1"#)).field == "priority")
        #expect(try #require(error(#""data":{"z":1,"from":"x","m":2}"#)).field == "data.from")
    }

    @Test func keyOrderDoesNotMatter() throws {
        let a = try DownstreamIntake.parse(line: #"{"to":"abc","message_id":"m","data":{"x":"1","y":"2"},"priority":"high"}"#, now: Self.now).get()
        let b = try DownstreamIntake.parse(line: #"{"priority":"high","data":{"y":"2","x":"1"},"message_id":"m","to":"abc"}"#, now: Self.now).get()
        #expect(a == b)
        #expect(a.jsonString() == b.jsonString())
        #expect(a.jsonString() == #"{"to":"abc","message_id":"m","priority":"high","data":{"x":"1","y":"2"}}"#)
    }

    @Test func payloadSizeBoundaries() throws {
        // {"k":"…"} is 8 bytes plus the value: 4088 x's is exactly 4096.
        #expect(error(#""data":{"k":"\#(String(repeating: "x", count: 4088))"}"#) == nil)
        let over = try #require(error(#""data":{"k":"\#(String(repeating: "x", count: 4089))"}"#))
        #expect(over.code == .payloadSize && over.value == "4097 bytes")
        // Topic: 2048 limit; notification alone is reported on "notification".
        #expect(error(#""notification":{"t":"x"}"#.replacingOccurrences(of: "\"t\"", with: "\"title\""), to: "/topics/a") == nil)
        let topic = try #require(error(#""notification":{"title":"\#(String(repeating: "é", count: 1100))"}"#, to: "/topics/a"))
        #expect(topic.field == "notification" && topic.code == .payloadSize)
        // Escapes count as written: 2 bytes for \", 6 for a control character.
        let escaped = DownstreamMessage(target: .token("t"), data: ["q": "\"\u{1}"], notification: ["title": .string("a\nb")])
        let written = JSONValue.object(["q": .string("\"\u{1}")]).serialized().utf8.count
            + JSONValue.object(["title": .string("a\nb")]).serialized().utf8.count
        #expect(escaped.payloadByteCount == written)
    }

    @Test func modelAPI() throws {
        var message = DownstreamMessage(target: .topic("news"), timeToLive: 0)
        #expect(message.targetKey == "/topics/news")
        #expect(message.effectiveTimeToLive == 0)
        message.timeToLive = nil
        #expect(message.effectiveTimeToLive == 2_419_200)
        #expect(message.messageID == nil)
        let stamped = message.withMessageID("m-9")
        #expect(stamped.messageID == "m-9" && message.messageID == nil)
        #expect(stamped.jsonString() == #"{"to":"/topics/news","message_id":"m-9"}"#)
        #expect(DownstreamMessage(target: .condition("'a' in topics")).targetKey == "'a' in topics")
        #expect(throws: ValidationError.self) { try DownstreamMessage(target: .topic("a/b")).validate() }
        try DownstreamMessage(target: .token("abc"), data: ["k": "v"]).validate()
    }
}

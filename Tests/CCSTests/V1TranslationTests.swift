import CCS
import Foundation
import Testing

/// FCM v1 `{"message": {…}}` input translated to legacy XMPP JSON (docs/v1-mapping.md).
/// Examples follow FCM's "Customize a message across platforms" and "Send an image" pages.
@Suite("V1 translation")
struct V1TranslationTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000.75)
    static let token = "bk3RNwTe3H0:CI2k_HHwgIpoDKCIZvvDMExUdFQ3P1"

    func translate(_ line: String) -> Result<DownstreamMessage, ValidationError> {
        DownstreamIntake.parse(line: line, now: Self.now)
    }

    func failure(_ line: String) throws -> ValidationError {
        switch translate(line) {
        case .failure(let error): return error
        case .success(let message): throw Unexpected(description: "accepted: \(message.jsonString())")
        }
    }

    func strings(_ values: [String: String]) -> [String: JSONValue] { values.mapValues { .string($0) } }

    struct Unexpected: Error, CustomStringConvertible { var description: String }

    // MARK: FCM documentation examples

    /// "Platform overrides": android click_action and apns category both become legacy click_action.
    @Test func platformOverridesExampleIsAConflict() throws {
        let e = try failure("""
        {"message":{"topic":"news","notification":{"title":"Breaking News","body":"New news story available."},
         "data":{"story_id":"story_12345"},
         "android":{"notification":{"click_action":"TOP_STORY_ACTIVITY","body":"Check out the Top Story"}},
         "apns":{"payload":{"aps":{"category":"NEW_MESSAGE_CATEGORY"}}}}}
        """)
        #expect(e.code == .conflict)
        #expect(e.field == "message.apns.payload.aps.category")
        #expect(e.rule.contains("message.android.notification.click_action"))
        #expect(e.value == #""NEW_MESSAGE_CATEGORY""#)
    }

    /// The same example for one platform translates; the Android body overrides the common body.
    @Test func androidOverrideTranslates() throws {
        let m = try translate("""
        {"message":{"topic":"news","notification":{"title":"Breaking News","body":"New news story available."},
         "data":{"story_id":"story_12345"},
         "android":{"notification":{"click_action":"TOP_STORY_ACTIVITY","body":"Check out the Top Story"}}}}
        """).get()
        #expect(m.target == .topic("news"))
        #expect(m.data == ["story_id": "story_12345"])
        #expect(m.notification == strings([
            "title": "Breaking News", "body": "Check out the Top Story", "click_action": "TOP_STORY_ACTIVITY",
        ]))
    }

    /// "Notification message with platform-specific delivery options", without the clashing category.
    @Test func deliveryOptionsExample() throws {
        let m = try translate("""
        {"message":{"token":"\(Self.token)",
         "notification":{"title":"Match update","body":"Arsenal goal in added time, score is now 3-0"},
         "android":{"ttl":"86400s","notification":{"click_action":"OPEN_ACTIVITY_1"}},
         "apns":{"headers":{"apns-priority":"5"}},
         "webpush":{"headers":{"TTL":"86400"}}}}
        """).get()
        #expect(m.target == .token(Self.token))
        #expect(m.timeToLive == 86400)
        #expect(m.priority == .normal)
        #expect(m.notification?["click_action"] == .string("OPEN_ACTIVITY_1"))
        #expect(m.jsonString() == #"{"to":"\#(Self.token)","priority":"normal","time_to_live":86400,"notification":{"body":"Arsenal goal in added time, score is now 3-0","click_action":"OPEN_ACTIVITY_1","title":"Match update"}}"#)
    }

    /// The full delivery-options example also sets apns category: refused as a click_action conflict.
    @Test func deliveryOptionsExampleWithCategoryConflicts() throws {
        let e = try failure("""
        {"message":{"token":"\(Self.token)","notification":{"title":"Match update","body":"Arsenal goal"},
         "android":{"ttl":"86400s","notification":{"click_action":"OPEN_ACTIVITY_1"}},
         "apns":{"headers":{"apns-priority":"5"},"payload":{"aps":{"category":"NEW_MESSAGE_CATEGORY"}}},
         "webpush":{"headers":{"TTL":"86400"}}}}
        """)
        #expect(e.code == .conflict && e.field == "message.apns.payload.aps.category")
    }

    @Test func colorAndIconExample() throws {
        let m = try translate("""
        {"message":{"topic":"news","notification":{"title":"Breaking News","body":"New news story available."},
         "android":{"notification":{"icon":"stock_ticker_update","color":"#7e55c3"}}}}
        """).get()
        #expect(m.notification == strings([
            "title": "Breaking News", "body": "New news story available.", "icon": "stock_ticker_update", "color": "#7e55c3",
        ]))
    }

    @Test func imageExample() throws {
        let image = "https://foo.bar.pizza-monster.png"
        let m = try translate("""
        {"message":{"topic":"industry-tech","notification":{"title":"Sparky says hello!","image":"\(image)"},
         "android":{"notification":{"image":"\(image)"}},
         "apns":{"payload":{"aps":{"mutable-content":1}},"fcm_options":{"image":"\(image)"}},
         "webpush":{"headers":{"image":"\(image)"}}}}
        """).get()
        #expect(m.notification == strings(["title": "Sparky says hello!", "image": image]))
        #expect(m.mutableContent == true)
    }

    @Test func differentImagesPerPlatformConflict() throws {
        let e = try failure("""
        {"message":{"topic":"t","android":{"notification":{"image":"https://a/1.png"}},
         "apns":{"fcm_options":{"image":"https://a/2.png"}}}}
        """)
        #expect(e.code == .conflict && e.field == "message.apns.fcm_options.image")
    }

    @Test func webpushLinkBecomesClickAction() throws {
        let m = try translate("""
        {"message":{"topic":"news","notification":{"title":"Breaking News"},"webpush":{"fcm_options":{"link":"https://dummypage.com"}}}}
        """).get()
        #expect(m.notification?["click_action"] == .string("https://dummypage.com"))
        let e = try failure(#"{"message":{"topic":"news","webpush":{"fcm_options":{"link":"http://dummypage.com"}}}}"#)
        #expect(e.field == "message.webpush.fcm_options.link" && e.code == .v1Format)
        let clash = try failure("""
        {"message":{"topic":"news","android":{"notification":{"click_action":"TOP_STORY_ACTIVITY"}},
         "webpush":{"fcm_options":{"link":"https://dummypage.com"}}}}
        """)
        #expect(clash.code == .conflict && clash.field == "message.webpush.fcm_options.link")
    }

    // MARK: Options

    @Test func everyOptionTranslates() throws {
        let m = try translate("""
        {"validate_only":true,"message":{"condition":"'a' in topics || 'b' in topics","data":{"k":"v"},
         "android":{"collapse_key":"c","priority":"HIGH","ttl":"3.5s",
           "notification":{"title_loc_key":"T","title_loc_args":["x"],"body_loc_key":"B","body_loc_args":["y","z"],
                           "channel_id":"scores","tag":"m-42","sound":"default"}},
         "apns":{"headers":{"apns-priority":"10","apns-collapse-id":"c","apns-expiration":"\(1_700_000_003)"},
                 "payload":{"aps":{"badge":5,"content-available":1,"mutable-content":0,"sound":"default",
                                   "alert":{"subtitle":"s","loc-key":"B","loc-args":["y","z"]}}}}}}
        """).get()
        #expect(m.target == .condition("'a' in topics || 'b' in topics"))
        #expect(m.dryRun == true)
        #expect(m.collapseKey == "c")
        #expect(m.priority == .high)
        #expect(m.timeToLive == 3)  // 3.5s rounds down; apns-expiration is 3 s (2.25 s) away, within tolerance
        #expect(m.contentAvailable == true)
        #expect(m.mutableContent == false)
        var expected = strings([
            "title_loc_key": "T", "body_loc_key": "B",
            "android_channel_id": "scores", "tag": "m-42", "sound": "default", "badge": "5", "subtitle": "s",
        ])
        expected["title_loc_args"] = .array([.string("x")])
        expected["body_loc_args"] = .array([.string("y"), .string("z")])
        #expect(m.notification == expected)
        // The translated message is an ordinary legacy message: it survives the legacy round trip.
        #expect(try DownstreamIntake.parse(line: m.jsonString(), now: Self.now).get() == m)
    }

    @Test func apsAlertStringIsTheBody() throws {
        let m = try translate(#"{"message":{"token":"abc","apns":{"payload":{"aps":{"alert":"Hello"}}}}}"#).get()
        #expect(m.notification == strings(["body": "Hello"]))
    }

    @Test(arguments: [
        ("\"1700003600\"", 3600), ("\"0\"", 0), ("\"1700000000\"", 0),
    ] as [(String, Int)])
    func apnsExpirationIsRelativeToTheInjectedClock(header: String, ttl: Int) throws {
        let m = try translate(#"{"message":{"token":"abc","apns":{"headers":{"apns-expiration":\#(header)}}}}"#).get()
        #expect(m.timeToLive == ttl)
    }

    @Test(arguments: [
        (#""apns-expiration":"1699999999""#, ValidationError.Code.v1Format),
        (#""apns-expiration":"soon""#, .v1Format),
        (#""apns-expiration":"1800000000""#, .timeToLive),
        (#""apns-priority":"1""#, .priority),
        (#""apns-priority":10"#, .type),
        (#""apns-push-type":"background""#, .noLegacyEquivalent),
    ])
    func apnsHeaderErrors(header: String, code: ValidationError.Code) throws {
        let e = try failure(#"{"message":{"token":"abc","apns":{"headers":{\#(header)}}}}"#)
        #expect(e.code == code, "\(e)")
        #expect(e.field.hasPrefix("message.apns.headers.apns-"))
    }

    @Test func conflictsBetweenPlatformOptions() throws {
        let ttl = try failure(#"{"message":{"token":"abc","android":{"ttl":"60s"},"webpush":{"headers":{"TTL":"120"}}}}"#)
        #expect(ttl.code == .conflict && ttl.field == "message.webpush.headers.TTL")
        #expect(ttl.rule.contains("message.android.ttl"))
        let priority = try failure(#"{"message":{"token":"abc","android":{"priority":"HIGH"},"apns":{"headers":{"apns-priority":"5"}}}}"#)
        #expect(priority.code == .conflict && priority.field == "message.apns.headers.apns-priority")
        let expiration = try failure(#"{"message":{"token":"abc","android":{"ttl":"60s"},"apns":{"headers":{"apns-expiration":"1700003600"}}}}"#)
        #expect(expiration.code == .conflict && expiration.field == "message.apns.headers.apns-expiration")
        let collapse = try failure(#"{"message":{"token":"abc","android":{"collapse_key":"a"},"apns":{"headers":{"apns-collapse-id":"b"}}}}"#)
        #expect(collapse.code == .conflict)
        // Agreeing values are fine.
        let agree = try translate(#"{"message":{"token":"abc","android":{"priority":"HIGH","ttl":"60s"},"apns":{"headers":{"apns-priority":"10"}},"webpush":{"headers":{"ttl":"60"}}}}"#).get()
        #expect(agree.priority == .high && agree.timeToLive == 60)
    }

    // MARK: Refusals name the v1 path

    @Test(arguments: [
        (#"{"message":{"token":"abc","android":{"direct_boot_ok":true}}}"#, "message.android.direct_boot_ok", ValidationError.Code.noLegacyEquivalent),
        (#"{"message":{"token":"abc","android":{"data":{"a":"b"}}}}"#, "message.android.data", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","android":{"notification":{"ticker":"x"}}}}"#, "message.android.notification.ticker", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","fcm_options":{"analytics_label":"x"}}}"#, "message.fcm_options", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","apns":{"fcm_options":{"analytics_label":"x"}}}}"#, "message.apns.fcm_options.analytics_label", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","apns":{"payload":{"custom":1}}}}"#, "message.apns.payload.custom", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","apns":{"payload":{"aps":{"thread-id":"t"}}}}}"#, "message.apns.payload.aps.thread-id", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","apns":{"payload":{"aps":{"sound":{"critical":1}}}}}}"#, "message.apns.payload.aps.sound", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","webpush":{"headers":{"Urgency":"high"}}}}"#, "message.webpush.headers.Urgency", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","webpush":{"notification":{"requireInteraction":true}}}}"#, "message.webpush.notification.requireInteraction", .noLegacyEquivalent),
        (#"{"message":{"token":"abc","android":{"tll":"1s"}}}"#, "message.android.tll", .unknownField),
        (#"{"message":{"token":"abc"},"validate":true}"#, "validate", .unknownField),
        (#"{"message":{"token":"abc","topic":"news"}}"#, "message", .targetCount),
        (#"{"message":{"data":{"a":"b"}}}"#, "message", .targetCount),
        (#"{"message":{"topic":"/topics/news"}}"#, "message.topic", .topicName),
        (#"{"message":{"topic":"bad name"}}"#, "message.topic", .topicName),
        (#"{"message":{"token":"/topics/news"}}"#, "message.token", .targetSyntax),
        (#"{"message":{"condition":"!('a' in topics)"}}"#, "message.condition", .conditionSyntax),
        (#"{"message":"x"}"#, "message", .type),
        (#"{"message":{"token":"abc","data":{"from":"x"}}}"#, "message.data.from", .reservedDataKey),
        (#"{"message":{"token":"abc","data":{"n":1}}}"#, "message.data.n", .dataValue),
        (#"{"message":{"token":"abc","android":{"ttl":"1d"}}}"#, "message.android.ttl", .v1Format),
        (#"{"message":{"token":"abc","android":{"ttl":86400}}}"#, "message.android.ttl", .v1Format),
        (#"{"message":{"token":"abc","android":{"ttl":"2419201s"}}}"#, "message.android.ttl", .timeToLive),
        (#"{"message":{"token":"abc","android":{"priority":"high"}}}"#, "message.android.priority", .priority),
        (#"{"message":{"token":"abc","android":{"notification":{"color":"red"}}}}"#, "message.android.notification.color", .color),
        (#"{"message":{"token":"abc","android":{"notification":{"body_loc_args":[1]}}}}"#, "message.android.notification.body_loc_args", .locArgs),
        (#"{"message":{"token":"abc","notification":{"subtitle":"s"}}}"#, "message.notification.subtitle", .unknownField),
        (#"{"message":{"token":"abc","apns":{"payload":{"aps":{"badge":"1"}}}}}"#, "message.apns.payload.aps.badge", .type),
        (#"{"message":{"token":"abc","apns":{"payload":{"aps":{"content-available":true}}}}}"#, "message.apns.payload.aps.content-available", .v1Format),
    ])
    func refusals(line: String, field: String, code: ValidationError.Code) throws {
        let e = try failure(line)
        #expect(e.field == field, "\(e)")
        #expect(e.code == code, "\(e)")
    }

    @Test func sizeLimitIsReportedOnTheV1Data() throws {
        let e = try failure(#"{"message":{"topic":"t","data":{"k":"\#(String(repeating: "x", count: 2100))"}}}"#)
        #expect(e.code == .payloadSize && e.field == "message.data")
    }

    @Test func translateV1IsCallableDirectly() throws {
        let m = try DownstreamIntake.translateV1(
            ["token": .string("abc"), "android": .object(["ttl": .string("0s")])], now: Self.now)
        #expect(m.timeToLive == 0)
        #expect(m.jsonString() == #"{"to":"abc","time_to_live":0}"#)
    }
}

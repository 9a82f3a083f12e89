import Testing
@testable import CCS

/// `MessageRecord` keeps its JSON as UTF-8 bytes and makes the `String` on a read: both initializers give
/// the same record, text, bytes and stanza.
@Suite struct MessageRecordTests {
    @Test(arguments: [
        #"{"message_id":"m-1","to":"token","data":{"a":"b"}}"#,
        #"{"message_id":"m-2","to":"/topics/news","data":{"text":"<&> \"quoted\" \\ tab\t"}}"#,
        #"{"message_id":"m-3","to":"token","data":{"text":"é, 中文, 😀, \u0000"}}"#,
        "",
    ])
    func theJSONReadsBackTheSameFromEitherInitializer(json: String) {
        let fromText = MessageRecord(messageID: "m", json: json, to: "token", rateKey: "token", acceptedAt: 1.5,
                                     acceptedAtUnixMillis: 1_500, timeToLive: 60)
        let fromBytes = MessageRecord(messageID: "m", jsonUTF8: Array(json.utf8), to: "token", rateKey: "token", acceptedAt: 1.5,
                                      acceptedAtUnixMillis: 1_500, timeToLive: 60)
        #expect(fromText == fromBytes)
        #expect(fromText.json == json)
        #expect(fromBytes.json == json)
        #expect(fromText.jsonUTF8 == Array(json.utf8))
        #expect(fromBytes.jsonUTF8 == Array(json.utf8))
        #expect(fromText.stanza == fromBytes.stanza)
        #expect(fromText.stanza == Array(CCSStanza.downstream(messageID: "m", json: json).utf8))
    }
}

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

    /// A record carries its message_id's hash (`messageIDHash`), which the live table, a store batch and the
    /// memory store file it under instead of hashing the message_id again: it is `SlotIndex.hash` of the
    /// message_id from either initializer, and the final record request carries the same one, given or not.
    @Test(arguments: ["m-1", "", "ccsd-20261201-000001", "é中😀 long enough to live outside the string's inline storage"])
    func theMessageIDHashIsTheOneSlotIndexGives(messageID: String) {
        let fromText = MessageRecord(messageID: messageID, json: "{}", to: "t", rateKey: "t", acceptedAt: 0,
                                     acceptedAtUnixMillis: 0, timeToLive: 60)
        let fromBytes = MessageRecord(messageID: messageID, jsonUTF8: Array("{}".utf8), to: "t", rateKey: "t", acceptedAt: 0,
                                      acceptedAtUnixMillis: 0, timeToLive: 60)
        #expect(fromText.messageIDHash == SlotIndex.hash(messageID))
        #expect(fromBytes.messageIDHash == SlotIndex.hash(messageID))
        let given = RecordRequest(id: 1, event: .expired(messageID: messageID), finalMessageID: messageID,
                                  finalMessageIDHash: fromText.messageIDHash)
        let computed = RecordRequest(id: 1, event: .expired(messageID: messageID), finalMessageID: messageID)
        #expect(given == computed)
        #expect(computed.finalMessageIDHash == SlotIndex.hash(messageID))
        #expect(RecordRequest(id: 2, event: .expired(messageID: messageID)).finalMessageIDHash == 0)
    }

    /// The stanza is written into the record's own storage (`withStanza`), with room for `escapeRoom` bytes
    /// of escapes; a message_id or JSON whose escapes need more is built by appending and copied in. Either
    /// way the bytes are `CCSStanza.downstream`'s, at every amount of escapes around that room, and the
    /// record's other fields read back as given.
    @Test func theStanzaInTheRecordsStorageIsTheDownstreamStanza() {
        let room = CCSStanza.escapeRoom
        for escapes in [0, 1, room / 4 - 1, room / 4, room / 4 + 1, room / 3, room / 3 + 1, room, 3 * room] {
            for (idEscapes, jsonEscapes) in [(0, escapes), (escapes, 0), (escapes / 2, escapes - escapes / 2)] {
                // `&` takes 5 bytes escaped (4 more), `<` and `>` 4 (3 more), `"` in the attribute 6 (5 more).
                let id = "m-" + String(repeating: "\"", count: idEscapes)
                let json = #"{"to":"token","data":{"t":""# + String(repeating: "&<>", count: jsonEscapes) + #""}}"#
                let record = MessageRecord(messageID: id, jsonUTF8: Array(json.utf8), to: "token", rateKey: "key",
                                           acceptedAt: 2.5, acceptedAtUnixMillis: 2_500, timeToLive: 7)
                let expected = Array(CCSStanza.downstream(messageID: id, json: json).utf8)
                #expect(record.withStanza { Array($0) } == expected, "\(idEscapes) \(jsonEscapes)")
                #expect(record.stanza == expected)
                #expect(Array(json.utf8).withUnsafeBufferPointer { CCSStanza.downstreamUTF8(messageID: id, jsonUTF8: $0) } == expected)
                #expect(record.messageID == id && record.json == json && record.to == "token" && record.rateKey == "key")
                #expect(record.acceptedAt == 2.5 && record.acceptedAtUnixMillis == 2_500 && record.timeToLive == 7)
                #expect(record.messageIDHash == SlotIndex.hash(id))
            }
        }
    }
}

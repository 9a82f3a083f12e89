import CCS
import Foundation
import Testing
import XMLStream
@testable import CCSEmulator

/// The emulator's per-message shortcuts give what the general path gives: the plain ack written as bytes is
/// the stanza `DownstreamPolicy.decide` and `ServerStanzas.message` write, the few-field read of a downstream
/// message classifies it as the whole-object read does, and `isPlainAck` holds only when `decide` acks
/// without extra fields (and does for all such targets but those starting with `g` or `c`).
@Suite struct EmulatorFastPathTests {
    static let targets = ["tok-1", "bench-token-7-APA91b", "bad-x", "unreg-y", "flaky-z", "rate-w", "group-a",
                          "group-unusual-b", "canon-c", "c", "g", "b", "a&b", "q\"uote", "back\\slash", "lt<gt>",
                          "ünï", "😀", "", "tab\there"]
    static let messageIDs = ["m-1", "b-123456", "id with space", "amp&", "quote\"", "ü", "\u{FFFE}"]

    @Test func thePlainAckIsDecidesAck() {
        var policy = DownstreamPolicy(rules: NackRule.defaults, nackRate: 0, seed: 1)
        for target in Self.targets {
            for messageID in Self.messageIDs {
                let decided = policy.decide(messageID: messageID, target: target, attempt: 1)
                guard policy.isPlainAck(target: target) else { continue }
                #expect(decided == .ack(json: #"{"from":\#(JSONValue.string(target).serialized()),"message_id":\#(JSONValue.string(messageID).serialized()),"message_type":"ack"}"#),
                        "\(target) \(messageID)")
                var bytes: [UInt8] = []
                if ServerStanzas.appendPlainAck(from: target, messageID: messageID, to: &bytes) {
                    #expect(String(decoding: bytes, as: UTF8.self) == ServerStanzas.message(json: decided.json), "\(target) \(messageID)")
                }
            }
        }
    }

    @Test func isPlainAckHoldsOnlyForPlainAcks() {
        var policy = DownstreamPolicy(rules: NackRule.defaults + [NackRule(prefix: "tok-9", code: .badRegistration)],
                                      nackRate: 0, seed: 1)
        for target in Self.targets + ["tok-9x", "tok-8"] {
            let decided = policy.decide(messageID: "m", target: target, attempt: 1)
            let plain: Bool
            if case .ack(let json) = decided {
                plain = !json.contains("success") && !json.contains("registration_id")
            } else {
                plain = false
            }
            // Only for plain acks; and for every plain ack but those to targets starting with `g` or `c`,
            // which it leaves to `decide` (the special targets start so).
            if policy.isPlainAck(target: target) { #expect(plain, "\(target)") }
            if !target.hasPrefix("g"), !target.hasPrefix("c") {
                #expect(policy.isPlainAck(target: target) == (plain && !target.isEmpty), "\(target)")
            }
        }
        #expect(!policy.isPlainAck(target: nil))
        #expect(!DownstreamPolicy(rules: [], nackRate: 0.5, seed: 1).isPlainAck(target: "tok-1"))
    }

    /// A rule `decide` matches is never skipped by the first-byte shortcut: an empty prefix (it matches every
    /// target), and prefixes that match through canonical equivalence (`String.hasPrefix`: "é" precomposed
    /// against "e" with a combining acute) though their first bytes differ.
    @Test func isPlainAckNeverSkipsARuleDecideMatches() {
        let cases: [(rule: String, target: String)] = [("", "tok-1"), ("", "a"), ("e\u{301}", "\u{E9}x"), ("\u{E9}", "e\u{301}x")]
        for (prefix, target) in cases {
            var policy = DownstreamPolicy(rules: [NackRule(prefix: prefix, code: .badRegistration)], nackRate: 0, seed: 1)
            let decided = policy.decide(messageID: "m", target: target, attempt: 1)
            if case .nack = decided {
                #expect(!policy.isPlainAck(target: target), "rule \(prefix.unicodeScalars.map(\.value)) target \(target.unicodeScalars.map(\.value))")
            }
        }
        // The cases above do reach `decide`'s rule.
        var empty = DownstreamPolicy(rules: [NackRule(prefix: "", code: .badRegistration)], nackRate: 0, seed: 1)
        #expect(empty.decide(messageID: "m", target: "tok-1", attempt: 1).json.contains("BAD_REGISTRATION"))
    }

    @Test func theFewFieldReadClassifiesAsTheWholeObject() {
        let texts = [#"{"to":"t","message_id":"m","data":{"a":"b"}}"#, #"{"condition":"'a' in topics","message_id":"m"}"#,
                     #"{"to":5,"condition":"c","message_id":"m"}"#, #"{"message_id":"m"}"#, #"{"to":"t","message_id":""}"#,
                     #"{"to":"t","message_id":"m","delivery_receipt_requested":true}"#, #"{"to":"t","message_id":7}"#,
                     #"{"to":"t","message_id":"m","message_type":"ack"}"#, #"{"to":"t","to":"u","message_id":"m"}"#,
                     #"{"to":"ü😀","message_id":"\u00e9"}"#]
        for text in texts {
            let stanza = XMLElement(name: "message", namespace: XMLNamespace.client,
                                    children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: text)])
            let fast = ClientPayload.plainDownstream(text)
            if let fast { #expect(ClientPayload.classify(stanza) == .downstream(fast), "\(text)") }
            // And the classification itself is the whole object's, read by JSONValue.
            let object = (try? JSONValue.parse(text))?.objectValue
            if object?["message_type"] == nil, let id = object?["message_id"]?.stringValue, !id.isEmpty {
                #expect(ClientPayload.classify(stanza) == .downstream(.init(
                    messageID: id, target: object?["to"]?.stringValue ?? object?["condition"]?.stringValue,
                    deliveryReceiptRequested: object?["delivery_receipt_requested"]?.boolValue ?? false)), "\(text)")
            }
        }
    }

    /// The emulator's payload read (`ClientPayload.plainDownstream(payload:of:)`, on the text the stream
    /// parser hands over for `XMLPayloadShape.ccs`) takes only stanzas it reads as the general path does:
    /// fed the same stream, whole and byte by byte, the payload-reading parser (taken payloads, then the
    /// stanzas it declines or builds) gives the classification of every stanza in order that the general
    /// parser's built stanzas give (a `message` outside `jabber:client` is not delivered: not CCS).
    @Test func thePayloadReadClassifiesAsTheBuiltStanza() throws {
        let gcm = #"<gcm xmlns="google:mobile:data">"#
        let stanzas = [
            #"<message id="">\#(gcm){"to":"t","message_id":"m1","data":{"a":"b"}}</gcm></message>"#,
            #"<message>\#(gcm){"condition":"'a' in topics","message_id":"m2"}</gcm></message>"#,
            #"<x:message xmlns:x="urn:other">\#(gcm){"to":"t","message_id":"m3"}</gcm></x:message>"#,
            #"<c:message xmlns:c="jabber:client">\#(gcm){"to":"t","message_id":"m4"}</gcm></c:message>"#,
            #"<message xmlns="urn:other">\#(gcm){"to":"t","message_id":"m5"}</gcm></message>"#,
            #"<message type="error">\#(gcm){"to":"t","message_id":"m6"}</gcm></message>"#,
            #"<message>\#(gcm) {"to":"t","message_id":"m7"}&#10;</gcm></message>"#,
            #"<message>\#(gcm){"to":"a&amp;b&lt;","message_id":"m&#x38;"}</gcm></message>"#,
            #"<message>\#(gcm)<![CDATA[{"to":"t","message_id":"m9"}]]></gcm></message>"#,
            #"<message>\#(gcm){"to":"t","message_id":"m10","delivery_receipt_requested":true}</gcm></message>"#,
            #"<message>\#(gcm){"message_id":"m11","message_type":"ack"}</gcm></message>"#,
            #"<message>\#(gcm){"to":"t"}</gcm></message>"#,
            #"<message>\#(gcm)not json</gcm></message>"#,
            #"<message>\#(gcm){"to":"t","message_id":"m14"}</gcm><body/></message>"#,
            #"<message><gcm xmlns="urn:x">{"to":"t","message_id":"m15"}</gcm></message>"#,
            #"<message>\#(gcm){"to":"ü😀","message_id":"é"}</gcm></message>"#,
        ]
        let header = #"<stream:stream xmlns="jabber:client" xmlns:stream="http://etherx.jabber.org/streams" to="gcm.googleapis.com" version="1.0">"#
        let stream = Array((header + stanzas.joined()).utf8)
        let classify = { (stanza: XMLElement) -> ClientPayload in
            stanza.is("message", XMLNamespace.client) ? ClientPayload.classify(stanza) : .notCCS
        }
        var general: [ClientPayload] = []
        try XMLStreamParser().feed(stream) { event in
            if case .stanza(let stanza) = event { general.append(classify(stanza)) }
        }
        #expect(general.count == stanzas.count)
        for chunk in [stream.count, 1] {
            let parser = XMLStreamParser(payloadShape: .ccs)
            var read: [ClientPayload] = []
            var taken = 0
            for start in stride(from: 0, to: stream.count, by: chunk) {
                try stream[start..<min(start + chunk, stream.count)].withUnsafeBytes { bytes in
                    try parser.feed(bytes, payload: { text in
                        guard let message = ClientPayload.plainDownstream(payload: text, of: parser) else { return false }
                        read.append(.downstream(message))
                        taken += 1
                        return true
                    }) { event in
                        if case .stanza(let stanza) = event { read.append(classify(stanza)) }
                    }
                }
            }
            #expect(read == general, "chunk \(chunk)")
            #expect(taken == 6, "chunk \(chunk)")  // m1, m2, m4, m8, m9, m16
        }
    }
}

import CCS
import Foundation
import Testing
import XMLStream

/// Inputs the fuzz targets found (kept in Tests/Fuzz/Corpus as regress-*), as unit tests of the rule each broke.
@Suite struct FuzzFoundRegressionTests {
    /// A U+FEFF at the start of a JSON string (raw, or written `\ufeff` and then written raw by ccsd) is kept:
    /// Foundation alone drops it as a byte-order mark.
    @Test func aLeadingZeroWidthNoBreakSpaceInAStringIsKept() throws {
        for line in ["{\"to\":\"tok\",\"message_id\":\"m\",\"data\":{\"k\":\"\\ufeff\"}}",
                     "{\"to\":\"tok\",\"message_id\":\"m\",\"data\":{\"k\":\"\u{FEFF}\",\"\u{FEFF}k\":\"\u{FEFF}x\"}}"] {
            let message = try DownstreamIntake.parse(line: line, now: Date()).get()
            #expect(message.data?["k"] == "\u{FEFF}")
            #expect(try DownstreamIntake.parse(line: message.jsonString(), now: Date()).get() == message)
        }
        let upstream = try #require(try InboundMessage.parse(stanza: XMLElement(name: "message", children: [
            XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: "{\"message_id\":\"\u{FEFF}u-1\",\"from\":\"\u{FEFF}d\",\"data\":{}}")])))
        guard case .upstream(let message) = upstream else {
            Issue.record("not an upstream message: \(upstream)")
            return
        }
        #expect(message.messageID == "\u{FEFF}u-1" && message.from == "\u{FEFF}d")
        // A byte-order mark before the text is still fine.
        #expect(try JSONValue.parse(Data([0xEF, 0xBB, 0xBF] + Array("{\"a\":1}".utf8))) == .object(["a": .int(1)]))
    }

    /// A stanza error about an ACK whose message_id starts with a combining mark is still about the ACK.
    @Test func anAckIDBeforeACombiningMarkIsStillAnAckID() {
        let error = InboundMessage.StanzaError(
            id: CCSStanza.ackStanzaID(messageID: "\u{0742}u-1"), messageID: nil, condition: "bad-request")
        #expect(error.isAboutAck)
        #expect(error.resolvedMessageID == nil)
    }
}

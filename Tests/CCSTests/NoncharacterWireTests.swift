import CCS
import Foundation
import Testing
import XMLStream

/// U+FFFE and U+FFFF are valid in JSON strings but are not XML 1.0 characters: ccsd's JSON writer escapes
/// them, so that a downstream message and the ACK of an upstream message reach the server as written.
@Suite struct NoncharacterWireTests {
    /// The `gcm` text of the one stanza in `stanza`, read as a server reads a client stream.
    func serverReads(_ stanza: String) throws -> String {
        let parser = XMLStreamParser()
        var stanzas: [XMLElement] = []
        try parser.feed(XMLWriter.streamHeader(to: "gcm.googleapis.com") + stanza) {
            if case .stanza(let element) = $0 { stanzas.append(element) }
        }
        return try #require(stanzas.first?.child("gcm", namespace: XMLNamespace.gcm)).text
    }

    @Test func aDownstreamMessageWithNoncharactersReachesTheServerAsWritten() throws {
        let line = #"{"to":"tok-1","message_id":"m-\ufffe","data":{"k\ufffe":"a\ufffeb\uffff"},"notification":{"title":"\uffff"}}"#
        let message = try DownstreamIntake.parse(line: line, now: Date()).get()
        #expect(message.data == ["k\u{FFFE}": "a\u{FFFE}b\u{FFFF}"])
        let json = message.jsonString()
        #expect(!json.unicodeScalars.contains("\u{FFFE}") && !json.unicodeScalars.contains("\u{FFFF}"))
        let read = try serverReads(CCSStanza.downstream(messageID: message.messageID!, json: json))
        #expect(read == json)
        #expect(try DownstreamIntake.parse(line: read, now: Date()).get() == message)
        #expect(try JSONValue.parse(JSONValue.object(["k": .string("\u{FFFF}")]).serialized()) == .object(["k": .string("\u{FFFF}")]))
    }

    @Test func theAckOfAnUpstreamMessageIDWithNoncharactersEchoesIt() throws {
        let read = try serverReads(CCSStanza.ack(to: "device-\u{FFFF}", messageID: "u-\u{FFFE}"))
        let ack = try JSONValue.parse(read)
        #expect(ack["message_id"]?.stringValue == "u-\u{FFFE}")
        #expect(ack["to"]?.stringValue == "device-\u{FFFF}")
    }
}

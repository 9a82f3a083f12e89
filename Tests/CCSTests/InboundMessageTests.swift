import Testing
import XMLStream
@testable import CCS

/// Classification of inbound `<message>` stanzas (ccs-protocol.md §2–3).
@Suite struct InboundMessageTests {
    static func message(_ json: String, type: String? = nil, id: String? = nil, gcmNamespace: String = XMLNamespace.gcm, extra: [XMLElement] = []) -> XMLElement {
        var attributes: [XMLAttribute] = []
        if let id { attributes.append(.init(name: "id", value: id)) }
        if let type { attributes.append(.init(name: "type", value: type)) }
        return XMLElement(name: "message", namespace: XMLNamespace.client, attributes: attributes,
                          children: [XMLElement(name: "gcm", namespace: gcmNamespace, text: json)] + extra)
    }

    @Test func ackWithCanonicalRegistrationID() throws {
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"from":"TOKEN","message_id":"m-1","message_type":"ack","registration_id":"NEW"}"#))
        #expect(parsed == .ack(.init(messageID: "m-1", from: "TOKEN", canonicalRegistrationID: "NEW")))
    }

    @Test func nackWithErrorAndDescription() throws {
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"message_type":"nack","message_id":"m-1","from":"T","error":"BAD_REGISTRATION","error_description":"Invalid token"}"#))
        #expect(parsed == .nack(.init(messageID: "m-1", from: "T", error: "BAD_REGISTRATION", errorDescription: "Invalid token")))
    }

    @Test func deviceGroupAck() throws {
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"from":"G","message_id":"g","message_type":"ack","success":1,"failure":2,"failed_registration_ids":["a","b"]}"#))
        #expect(parsed == .ack(.init(messageID: "g", from: "G", success: 1, failure: 2, failedRegistrationIDs: ["a", "b"])))
    }

    @Test func receiptCarriesOriginalIDAndStatus() throws {
        let json = #"{"category":"com.example","data":{"message_status":"MESSAGE_SENT_TO_DEVICE","original_message_id":"m-1","device_registration_id":"TOKEN","message_sent_timestamp":"1430277821658"},"message_id":"dr2:m-1","message_type":"receipt","time_to_live":0,"from":"gcm.googleapis.com"}"#
        let parsed = try InboundMessage.parse(stanza: Self.message(json))
        #expect(parsed == .receipt(.init(messageID: "dr2:m-1", from: "gcm.googleapis.com", originalMessageID: "m-1",
                                         status: "MESSAGE_SENT_TO_DEVICE", deviceRegistrationID: "TOKEN", category: "com.example")))
    }

    @Test func controlDrainingHasNoMessageID() throws {
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#))
        #expect(parsed == .control(controlType: "CONNECTION_DRAINING"))
    }

    @Test func upstreamKeepsDataExactly() throws {
        let json = "  {\"category\":\"com.example.app\",\"data\":{\"text\":\"<a href='x'>&amp; \\\"q\\\" 😀</a>\"},\"message_id\":\"u-1\",\"from\":\"DEV\",\"time_to_live\":86400}\n"
        let parsed = try InboundMessage.parse(stanza: Self.message(json))
        #expect(parsed == .upstream(.init(messageID: "u-1", from: "DEV", category: "com.example.app",
                                          data: .object(["text": .string("<a href='x'>&amp; \"q\" 😀</a>")]), timeToLive: 86400)))
    }

    @Test func unknownMessageTypeIsNotAnError() throws {
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"message_type":"sparkle","message_id":"x"}"#))
        #expect(parsed == .unknown(messageType: "sparkle", messageID: "x"))
    }

    @Test func stanzaErrorIsCorrelatedByIDAttribute() throws {
        let error = XMLElement(name: "error", namespace: XMLNamespace.client, attributes: [.init(name: "code", value: "400"), .init(name: "type", value: "modify")], children: [
            XMLElement(name: "bad-request", namespace: XMLNamespace.stanzas),
            XMLElement(name: "text", namespace: XMLNamespace.stanzas, text: "InvalidJson: JSON_PARSING_ERROR : Missing Required Field: message_id")])
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"random":"text"}"#, type: "error", id: "m-7", extra: [error]))
        guard case .stanzaError(let e)? = parsed else { Issue.record("expected stanza error"); return }
        #expect(e.resolvedMessageID == "m-7")
        #expect(e.condition == "bad-request")
        #expect(e.code == "400")
        #expect(e.text?.hasPrefix("InvalidJson") == true)
    }

    @Test func stanzaErrorWithoutTextOrIDFallsBackToEchoedMessageID() throws {
        let error = XMLElement(name: "error", namespace: XMLNamespace.client, children: [XMLElement(name: "bad-request", namespace: XMLNamespace.stanzas)])
        let parsed = try InboundMessage.parse(stanza: Self.message(#"{"message_id":"m-9"}"#, type: "error", extra: [error]))
        guard case .stanzaError(let e)? = parsed else { Issue.record("expected stanza error"); return }
        #expect(e.resolvedMessageID == "m-9")
        #expect(e.text == nil)
    }

    @Test func nonCCSMessagesAreIgnored() throws {
        let chat = XMLElement(name: "message", namespace: XMLNamespace.client, children: [XMLElement(name: "body", namespace: XMLNamespace.client, text: "hi")])
        #expect(try InboundMessage.parse(stanza: chat) == nil)
        // gcm in another namespace is not CCS.
        #expect(try InboundMessage.parse(stanza: Self.message("{}", gcmNamespace: "urn:other")) == nil)
    }

    @Test func badPayloadsAreTypedErrors() {
        #expect(throws: InboundParseError.self) { try InboundMessage.parse(stanza: Self.message("not json")) }
        #expect(throws: InboundParseError.self) { try InboundMessage.parse(stanza: Self.message("[1,2]")) }
        #expect(throws: InboundParseError.self) { try InboundMessage.parse(stanza: Self.message(#"{"message_type":"ack"}"#)) }
        #expect(throws: InboundParseError.self) { try InboundMessage.parse(stanza: Self.message(#"{"message_id":"u-1","data":{}}"#)) }
        #expect(error(#"not json"#)?.field == "gcm")
        #expect(error(#"not json"#)?.rule.hasPrefix("the payload is not valid JSON") == true)
        #expect(error("[1,2]")?.rule.hasPrefix("the payload is a JSON array, not an object") == true)
        #expect(error(#"{"message_type":"ack"}"#)?.field == "message_id")
        let noFrom = error(#"{"message_id":"u-1","data":{}}"#)
        #expect(noFrom?.field == "from")
        #expect(noFrom?.rule == "a non-empty string is required")
        #expect(noFrom?.messageID == "u-1", "an unreadable message is logged by its message_id when it has one")
    }

    private func error(_ json: String) -> InboundParseError? {
        do {
            _ = try InboundMessage.parse(stanza: Self.message(json))
            return nil
        } catch {
            return error
        }
    }
}

import CCS
@testable import CCSEmulator
import Foundation
import Testing
import XMLStream

/// Transcripts through the emulator's server-side negotiation, no sockets (ccs-protocol.md §1).
@Suite struct EmulatorNegotiationTests {
    static func machine(domain: String = "gcm.googleapis.com") -> ServerNegotiation {
        ServerNegotiation(senderID: "123456789", serverKey: "s3cr3t-key", jidDomain: domain, connectionTag: "7")
    }
    static let header = XMLElement(name: "stream", namespace: XMLNamespace.stream,
                                   attributes: [.init(name: "to", value: "gcm.googleapis.com")])
    static func auth(_ plain: String, mechanism: String = "PLAIN") -> XMLElement {
        XMLElement(name: "auth", namespace: XMLNamespace.sasl, attributes: [.init(name: "mechanism", value: mechanism)],
                   text: Data(plain.utf8).base64EncodedString())
    }
    static func iq(_ type: String, id: String, _ child: XMLElement) -> XMLElement {
        XMLElement(name: "iq", namespace: XMLNamespace.client,
                   attributes: [.init(name: "type", value: type), .init(name: "id", value: id)], children: [child])
    }

    /// Parses what the server wrote, inside a client-namespace stream as the client would see it.
    static func parseOutput(_ text: String) throws -> [XMLStreamEvent] {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        let prefix = text.hasPrefix("<stream:stream") ? "" : XMLWriter.streamHeader(to: nil, from: "x")
        try parser.feed(prefix + text) { events.append($0) }
        return prefix.isEmpty ? events : Array(events.dropFirst())
    }

    static func sentText(_ actions: [ServerNegotiation.Action]) -> [String] {
        actions.compactMap { if case .send(let text) = $0 { text } else { nil } }
    }

    /// Drives a machine through header and PLAIN success and the restarted header.
    static func toBind(_ m: inout ServerNegotiation) {
        _ = m.streamStarted(header)
        _ = m.stanzaReceived(auth("\u{0}123456789@gcm.googleapis.com\u{0}s3cr3t-key"))
        _ = m.streamStarted(header)
    }

    @Test func headerIsAnsweredWithHeaderAndPrefixedFeaturesOfferingThreeMechanisms() throws {
        var m = Self.machine()
        let actions = m.streamStarted(Self.header)
        let text = try #require(Self.sentText(actions).first)
        #expect(text.contains("<stream:features>"))
        let events = try Self.parseOutput(text)
        guard case .streamStart(let header)? = events.first, case .stanza(let features)? = events.last else {
            Issue.record("unexpected events \(events)"); return
        }
        #expect(header.attribute("from") == "gcm.googleapis.com")
        #expect(header.attribute("id")?.isEmpty == false)
        #expect(features.is("features", XMLNamespace.stream))
        let mechanisms = features.child("mechanisms", namespace: XMLNamespace.sasl)?
            .children("mechanism", namespace: XMLNamespace.sasl).map(\.text)
        #expect(mechanisms == ["X-OAUTH2", "X-GOOGLE-TOKEN", "PLAIN"])
        #expect(m.state == .awaitingAuth)
    }

    @Test func plainSuccessResetsParserAndRestartsWithBindAndSessionFeatures() throws {
        var m = Self.machine()
        _ = m.streamStarted(Self.header)
        let actions = m.stanzaReceived(Self.auth("\u{0}123456789@gcm.googleapis.com\u{0}s3cr3t-key"))
        #expect(actions == [.send("<success xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/>"), .resetParser,
                            .authenticated(bareJID: "123456789@gcm.googleapis.com")])
        #expect(m.state == .awaitingStreamHeader(authenticated: true))
        let restart = try #require(Self.sentText(m.streamStarted(Self.header)).first)
        guard case .stanza(let features)? = try Self.parseOutput(restart).last else { Issue.record("no features"); return }
        #expect(features.child("bind", namespace: XMLNamespace.bind) != nil)
        #expect(features.child("session", namespace: XMLNamespace.session) != nil)
        #expect(features.child("mechanisms", namespace: XMLNamespace.sasl) == nil)
    }

    @Test func wrongServerKeyFailsNotAuthorizedAndCloses() {
        var m = Self.machine()
        _ = m.streamStarted(Self.header)
        let actions = m.stanzaReceived(Self.auth("\u{0}123456789@gcm.googleapis.com\u{0}bogus-key-xyz"))
        #expect(actions.first == .send("<failure xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"><not-authorized/></failure>"))
        #expect(actions.last == .close(streamErrorCondition: nil, text: nil))
        guard case .authenticationFailed(let reason)? = actions.dropFirst().first else {
            Issue.record("no authenticationFailed in \(actions)"); return
        }
        #expect(!reason.contains("s3cr3t") && !reason.contains("bogus-key-xyz"))
        #expect(m.state == .closed)
    }

    @Test func wrongJIDDomainFails() {
        // The connect host as the domain: the classic CCS mistake (ccs-protocol.md §1).
        var m = Self.machine()
        _ = m.streamStarted(Self.header)
        let actions = m.stanzaReceived(Self.auth("\u{0}123456789@fcm-xmpp.googleapis.com\u{0}s3cr3t-key"))
        #expect(actions.first == .send(ServerStanzas.saslFailure(condition: "not-authorized")))
        #expect(actions.contains(.authenticationFailed(reason: "wrong JID domain fcm-xmpp.googleapis.com (expected gcm.googleapis.com)")))
    }

    @Test func configuredJIDDomainIsRequired() {
        var m = Self.machine(domain: "fcm.googleapis.com")
        _ = m.streamStarted(Self.header)
        #expect(m.stanzaReceived(Self.auth("\u{0}123456789@gcm.googleapis.com\u{0}s3cr3t-key")).first
                == .send(ServerStanzas.saslFailure(condition: "not-authorized")))
        var ok = Self.machine(domain: "fcm.googleapis.com")
        _ = ok.streamStarted(Self.header)
        #expect(ok.stanzaReceived(Self.auth("\u{0}123456789@fcm.googleapis.com\u{0}s3cr3t-key")).contains(.resetParser))
    }

    @Test func wrongSenderAndMalformedResponsesFail() {
        for (plain, condition) in [("\u{0}999@gcm.googleapis.com\u{0}s3cr3t-key", "not-authorized"),
                                   ("123456789@gcm.googleapis.com\u{0}s3cr3t-key", "malformed-request")] {
            var m = Self.machine()
            _ = m.streamStarted(Self.header)
            #expect(m.stanzaReceived(Self.auth(plain)).first == .send(ServerStanzas.saslFailure(condition: condition)))
        }
        var m = Self.machine()
        _ = m.streamStarted(Self.header)
        let notBase64 = XMLElement(name: "auth", namespace: XMLNamespace.sasl,
                                   attributes: [.init(name: "mechanism", value: "PLAIN")], text: "%%%")
        #expect(m.stanzaReceived(notBase64).first == .send(ServerStanzas.saslFailure(condition: "incorrect-encoding")))
    }

    @Test func bindAssignsSenderJIDWithRequestedOrGeneratedResource() throws {
        var m = Self.machine()
        Self.toBind(&m)
        let actions = m.stanzaReceived(Self.iq("set", id: "bind-1", XMLElement(name: "bind", namespace: XMLNamespace.bind)))
        #expect(actions.last == .bound(jid: "123456789@gcm.googleapis.com/emu-7"))
        let text = try #require(Self.sentText(actions).first)
        guard case .stanza(let result)? = try Self.parseOutput(text).first else { Issue.record("no result"); return }
        #expect(result.attribute("type") == "result" && result.attribute("id") == "bind-1")
        #expect(result.child("bind", namespace: XMLNamespace.bind)?.child("jid", namespace: XMLNamespace.bind)?.text
                == "123456789@gcm.googleapis.com/emu-7")

        var requested = Self.machine()
        Self.toBind(&requested)
        let bind = XMLElement(name: "bind", namespace: XMLNamespace.bind,
                              children: [XMLElement(name: "resource", namespace: XMLNamespace.bind, text: "ccsd-1")])
        #expect(requested.stanzaReceived(Self.iq("set", id: "b", bind)).last == .bound(jid: "123456789@gcm.googleapis.com/ccsd-1"))
    }

    @Test func sessionAndPingAreAnsweredAndMessagesDeliveredOnceBound() {
        var m = Self.machine()
        Self.toBind(&m)
        _ = m.stanzaReceived(Self.iq("set", id: "bind-1", XMLElement(name: "bind", namespace: XMLNamespace.bind)))
        #expect(m.stanzaReceived(Self.iq("set", id: "session-2", XMLElement(name: "session", namespace: XMLNamespace.session)))
                == [.send("<iq type=\"result\" id=\"session-2\"/>")])
        #expect(m.stanzaReceived(Self.iq("get", id: "p1", XMLElement(name: "ping", namespace: XMLNamespace.ping)))
                == [.send("<iq type=\"result\" id=\"p1\"/>")])
        let message = XMLElement(name: "message", namespace: XMLNamespace.client)
        #expect(m.stanzaReceived(message) == [.deliver(message)])
        #expect(m.streamEnded() == [.close(streamErrorCondition: nil, text: nil)])
    }

    @Test func stanzasBeforeAuthenticationCloseTheStream() {
        var m = Self.machine()
        _ = m.streamStarted(Self.header)
        #expect(m.stanzaReceived(XMLElement(name: "message", namespace: XMLNamespace.client))
                == [.close(streamErrorCondition: "not-authorized", text: "authenticate first")])
        var unbound = Self.machine()
        Self.toBind(&unbound)
        #expect(unbound.stanzaReceived(XMLElement(name: "message", namespace: XMLNamespace.client))
                == [.close(streamErrorCondition: "not-authorized", text: "bind a resource first")])
    }
}

/// The downstream decisions and payload classification, no sockets (ccs-protocol.md §3–4).
@Suite struct EmulatorPolicyTests {
    static func message(_ json: String, id: String? = nil) -> XMLElement {
        XMLElement(name: "message", namespace: XMLNamespace.client,
                   attributes: id.map { [.init(name: "id", value: $0)] } ?? [],
                   children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
    }

    @Test func rulesByPrefixWithFirstAttemptOnly() throws {
        var policy = DownstreamPolicy(rules: NackRule.defaults, nackRate: 0, seed: 1)
        guard case .nack(let code, let json) = policy.decide(messageID: "m1", target: "bad-x", attempt: 1) else {
            Issue.record("bad- not nacked"); return
        }
        #expect(code == "BAD_REGISTRATION")
        #expect(json.hasPrefix(#"{"message_type":"nack","message_id":"m1","from":"bad-x","error":"BAD_REGISTRATION","error_description":"#))
        #expect(policy.decide(messageID: "m1", target: "bad-x", attempt: 2).json.contains("BAD_REGISTRATION"))
        #expect(policy.decide(messageID: "m2", target: "flaky-x", attempt: 1).json.contains("SERVICE_UNAVAILABLE"))
        #expect(policy.decide(messageID: "m2", target: "flaky-x", attempt: 2)
                == .ack(json: #"{"from":"flaky-x","message_id":"m2","message_type":"ack"}"#))
        #expect(policy.decide(messageID: "m3", target: "rate-x", attempt: 1).json.contains("DEVICE_MESSAGE_RATE_EXCEEDED"))
    }

    @Test func canonicalAndDeviceGroupAcksParseAsTheClientReadsThem() throws {
        var policy = DownstreamPolicy(rules: [], nackRate: 0, seed: 1)
        let canon = policy.decide(messageID: "c1", target: "canon-abc", attempt: 1)
        guard case .ack(let ack)? = try InboundMessage.parse(stanza: Self.message(canon.json)) else {
            Issue.record("not an ack"); return
        }
        #expect(ack.canonicalRegistrationID == "canonical-canon-abc")
        let group = policy.decide(messageID: "g1", target: "group-k", attempt: 1)
        guard case .ack(let groupAck)? = try InboundMessage.parse(stanza: Self.message(group.json)) else {
            Issue.record("not an ack"); return
        }
        #expect(groupAck.group?.successCount == 2 && groupAck.group?.failureCount == 1)
        #expect(groupAck.group?.failedRegistrationIDs == .array([.string("failed-member-of-group-k")]))
    }

    @Test func nackRateIsSeededAndReproducible() {
        func outcomes(seed: UInt64) -> [Bool] {
            var policy = DownstreamPolicy(rules: [], nackRate: 0.5, seed: seed)
            return (0..<200).map { policy.decide(messageID: "m\($0)", target: "t", attempt: 1).json.contains("nack") }
        }
        let first = outcomes(seed: 42)
        #expect(first == outcomes(seed: 42))
        #expect(first != outcomes(seed: 43))
        let nacks = first.filter { $0 }.count
        #expect(nacks > 60 && nacks < 140)
        var never = DownstreamPolicy(rules: [], nackRate: 0, seed: 42)
        #expect(!(0..<100).contains { never.decide(messageID: "m\($0)", target: "t", attempt: 1).json.contains("nack") })
    }

    @Test func payloadClassification() {
        #expect(ClientPayload.classify(Self.message(#"{"to":"t","message_id":"m"}"#))
                == .downstream(.init(messageID: "m", target: "t", deliveryReceiptRequested: false)))
        #expect(ClientPayload.classify(Self.message(#"{"to":"t","random":"text"}"#, id: "m-7"))
                == .unreadable(id: "m-7", echoedPayload: #"{"to":"t","random":"text"}"#, text: ClientPayload.missingMessageIDText))
        #expect(ClientPayload.classify(Self.message(#"{"to":"g","message_id":"u-1","message_type":"ack"}"#)) == .ack(messageID: "u-1"))
        if case .unreadable = ClientPayload.classify(Self.message("not json")) {} else { Issue.record("not json was readable") }
        #expect(ClientPayload.classify(XMLElement(name: "message", namespace: XMLNamespace.client)) == .notCCS)
    }

    @Test func nackRuleParsing() {
        #expect(NackRule(parsing: "bad-=BAD_REGISTRATION") == NackRule(prefix: "bad-", code: "BAD_REGISTRATION"))
        #expect(NackRule(parsing: "x=SERVICE_UNAVAILABLE:once") == NackRule(prefix: "x", code: "SERVICE_UNAVAILABLE", firstAttemptOnly: true))
        #expect(NackRule(parsing: "nocode=") == nil)
        #expect(NackRule(parsing: "=CODE") == nil)
        #expect(NackRule(parsing: "plain") == nil)
    }

    @Test func drainingControlIsPrefixedAndRecognised() throws {
        #expect(ServerStanzas.connectionDraining.contains("<data:gcm xmlns:data=\"google:mobile:data\">"))
        let events = try EmulatorNegotiationTests.parseOutput(ServerStanzas.connectionDraining)
        guard case .stanza(let stanza)? = events.first else { Issue.record("no stanza"); return }
        #expect(try InboundMessage.parse(stanza: stanza) == .control(controlType: "CONNECTION_DRAINING"))
    }
}

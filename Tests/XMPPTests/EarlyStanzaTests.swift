import Foundation
import Testing
import XMLStream
@testable import XMPP

/// Stanzas that arrive before the negotiation step that would expect them (issue 7 item 2): from the bind
/// request on they are traffic (RFC 6120 §7, §8.2.3; RFC 6121 Appendix E), before it they are ignored or
/// answered (RFC 6120 §7.1), and only a nonza that does not fit the step fails the stream.
@Suite struct EarlyStanzaTests {
    typealias T = StreamNegotiationTests
    let credentials = XMPPCredentials(username: "123456789", password: Secret("s3cr3t-server-key"), jidDomain: "gcm.googleapis.com")

    // MARK: Stanzas of every kind

    static func message(_ json: String, type: String? = nil) -> XMLElement {
        XMLElement(name: "message", namespace: XMLNamespace.client,
                   attributes: type.map { [.init(name: "type", value: $0)] } ?? [],
                   children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
    }
    static let upstream = message(#"{"category":"c","data":{"a":"1"},"message_id":"u-1","from":"device-1"}"#)
    static let receipt = message(#"{"message_id":"dr2:m-1","message_type":"receipt","from":"gcm.googleapis.com","data":{}}"#)
    static let ack = message(#"{"message_id":"m-9","message_type":"ack","from":"t"}"#)
    static let draining = message(#"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#)
    static let stanzaError = message(#"{"x":1}"#, type: "error")
    static let presence = XMLElement(name: "presence", namespace: XMLNamespace.client,
                                     attributes: [.init(name: "from", value: "gcm.googleapis.com")])
    static let ping = T.iq("get", id: "srv-ping", children: [XMLElement(name: "ping", namespace: XMLNamespace.ping)],
                           from: "gcm.googleapis.com")
    static let versionGet = T.iq("get", id: "srv-version", children: [XMLElement(name: "query", namespace: "jabber:iq:version")],
                                 from: "gcm.googleapis.com")
    static let rosterSet = T.iq("set", id: "srv-roster", children: [XMLElement(name: "query", namespace: "jabber:iq:roster")])
    static let strayResult = T.iq("result", id: "not-ours-1")
    static let strayError = T.iq("error", id: "not-ours-2", children: [
        XMLElement(name: "error", namespace: XMLNamespace.client, attributes: [.init(name: "type", value: "cancel")],
                   children: [XMLElement(name: "item-not-found", namespace: XMLNamespace.stanzas)])])

    /// Messages, presence and IQ replies that are not ours: delivered as they are.
    static let delivered = [upstream, receipt, ack, draining, stanzaError, presence, strayResult, strayError]

    /// The reply each IQ request must get: a result for the ping, `service-unavailable` for the others.
    static func expectAnswered(_ actions: [StreamNegotiation.Action], to request: XMLElement,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        guard actions.count == 1, case .send(let reply) = actions[0] else {
            Issue.record("expected one reply to \(request.attribute("id")!), got \(actions)", sourceLocation: sourceLocation)
            return
        }
        #expect(reply.attribute("id") == request.attribute("id"), sourceLocation: sourceLocation)
        #expect(reply.attribute("to") == request.attribute("from"), sourceLocation: sourceLocation)
        if request.child("ping", namespace: XMLNamespace.ping) != nil {
            #expect(reply.attribute("type") == "result", sourceLocation: sourceLocation)
        } else {
            #expect(reply.attribute("type") == "error", sourceLocation: sourceLocation)
            #expect(StreamNegotiation.stanzaErrorCondition(reply) == "service-unavailable", sourceLocation: sourceLocation)
        }
    }

    /// Sends every kind of stanza to a machine in `state`; each must be traffic and leave the state alone.
    func expectTraffic(_ machine: inout StreamNegotiation, sourceLocation: SourceLocation = #_sourceLocation) {
        let state = machine.state
        for stanza in Self.delivered {
            #expect(machine.stanzaReceived(stanza) == [.deliver(stanza)], "\(stanza)", sourceLocation: sourceLocation)
        }
        for request in [Self.ping, Self.versionGet, Self.rosterSet] {
            Self.expectAnswered(machine.stanzaReceived(request), to: request, sourceLocation: sourceLocation)
        }
        #expect(machine.state == state, sourceLocation: sourceLocation)
    }

    // MARK: After the bind request

    @Test func everyStanzaWhileTheSessionIsPendingIsTrafficThenTheSessionResultMakesReady() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(T().toBinding(&machine, features: [T.bindFeature, T.sessionFeature(optional: false)]))
        let afterBind = machine.stanzaReceived(T.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
        guard case .send(let session)? = afterBind.first else { Issue.record("no session IQ: \(afterBind)"); return }
        guard case .establishingSession = machine.state else { Issue.record("state \(machine.state)"); return }
        expectTraffic(&machine)
        // An IQ request that happens to carry the session request's id is a request, not the answer.
        let lookalike = T.iq("get", id: session.attribute("id")!, children: [XMLElement(name: "query", namespace: "jabber:iq:last")])
        Self.expectAnswered(machine.stanzaReceived(lookalike), to: lookalike)
        #expect(!machine.isReady)
        #expect(machine.stanzaReceived(T.iq("result", id: session.attribute("id")!)) == [.ready(jid: "a@b/c")])
        expectTraffic(&machine)
    }

    @Test func everyStanzaWhileTheBindResultIsPendingIsTraffic() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(T().toBinding(&machine))
        expectTraffic(&machine)
        guard case .binding = machine.state else { Issue.record("state \(machine.state)"); return }
        #expect(machine.stanzaReceived(T.bindResult(id: bind.attribute("id")!, jid: "a@b/c")) == [.ready(jid: "a@b/c")])
    }

    // MARK: Before the bind request

    /// In each state before the bind request: messages, presence and IQ replies are ignored (one notice per
    /// stream), IQ requests answered, and negotiation carries on as if nothing had come.
    @Test func beforeTheBindRequestStanzasAreIgnoredOrAnsweredAndNegotiationCarriesOn() throws {
        let ignored = [Self.upstream, Self.receipt, Self.presence, Self.strayResult, Self.strayError, Self.stanzaError]
        for step in 0..<3 {
            var machine = StreamNegotiation(credentials: credentials)
            _ = machine.start()
            _ = machine.streamStarted(T.header())
            if step >= 1 {
                _ = machine.stanzaReceived(T.features([T.mechanisms(["PLAIN"])]))  // → authenticating
            }
            if step >= 2 {
                _ = machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl))
                _ = machine.streamStarted(T.header(id: "s2"))  // → awaiting post-auth features
            }
            let state = machine.state
            for (index, stanza) in ignored.enumerated() {
                let actions = machine.stanzaReceived(stanza)
                if index == 0 {
                    guard actions.count == 1, case .notice(let notice) = actions[0] else {
                        Issue.record("step \(step): expected one notice, got \(actions)")
                        continue
                    }
                    #expect(notice.kind == .unexpectedStanza)
                    #expect(notice.message.contains("<message> before resource binding"))
                    #expect(!notice.description.contains("device-1"), "a notice carries no stanza content")
                } else {
                    #expect(actions == [], "step \(step): \(stanza)")
                }
            }
            #expect(machine.ignoredBeforeBind == ignored.count)
            for request in [Self.ping, Self.versionGet, Self.rosterSet] {
                Self.expectAnswered(machine.stanzaReceived(request), to: request)
            }
            #expect(machine.state == state, "step \(step)")
            // Negotiation carries on.
            switch step {
            case 0:
                guard case .send(let auth)? = machine.stanzaReceived(T.features([T.mechanisms(["PLAIN"])])).first else {
                    Issue.record("no auth after early stanzas"); continue
                }
                #expect(auth.is("auth", XMLNamespace.sasl))
            case 1:
                #expect(machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl))
                        == [.restartStream(to: "gcm.googleapis.com")])
            default:
                guard case .send(let bind)? = machine.stanzaReceived(T.features([T.bindFeature])).first else {
                    Issue.record("no bind after early stanzas"); continue
                }
                #expect(bind.child("bind", namespace: XMLNamespace.bind) != nil)
            }
        }
    }

    /// A nonza that fits no step fails the stream with a message naming what was expected and what came.
    @Test func nonzasThatDoNotFitTheStepFailWithAReason() throws {
        let streamManagement = XMLElement(name: "r", namespace: "urn:xmpp:sm:3")
        var beforeFeatures = StreamNegotiation(credentials: credentials)
        _ = beforeFeatures.start()
        _ = beforeFeatures.streamStarted(T.header())
        guard case .fail(let error)? = beforeFeatures.stanzaReceived(streamManagement).last else {
            Issue.record("expected fail"); return
        }
        #expect(error.kind == .unexpectedStanza)
        #expect(error.message == "expected stream features, got <r> in namespace 'urn:xmpp:sm:3'")

        var authenticating = StreamNegotiation(credentials: credentials)
        _ = T().toAuthenticating(&authenticating)
        guard case .fail(let again)? = authenticating.stanzaReceived(T.features([T.mechanisms(["PLAIN"])])).last else {
            Issue.record("expected fail"); return
        }
        #expect(again.message.contains("expected SASL success or failure, got <features>"))
    }

    // MARK: From the wire: parser and machine together, as XMPPClient drives them

    /// Server bytes through `XMLStreamParser` and `StreamNegotiation` the way `XMPPClient` runs them: events
    /// handled as they come, the parser reset on `.restartStream` inside the handler.
    final class WireTranscript {
        var machine: StreamNegotiation
        let parser = XMLStreamParser()
        var actions: [StreamNegotiation.Action] = []

        init(credentials: XMPPCredentials) {
            machine = StreamNegotiation(credentials: credentials)
            actions += machine.start()
        }

        func receive(_ text: String, chunkSize: Int) throws {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + chunkSize)
                try parser.feed(Array(bytes[offset..<end])) { event in
                    let produced: [StreamNegotiation.Action]
                    switch event {
                    case .streamStart(let header): produced = machine.streamStarted(header)
                    case .stanza(let stanza): produced = machine.stanzaReceived(stanza)
                    case .streamEnd: produced = machine.streamEnded()
                    }
                    for action in produced {
                        if case .restartStream = action { parser.reset() }
                    }
                    actions += produced
                }
                offset = end
            }
        }

        /// The id of the last IQ we sent.
        var lastSentIQID: String? {
            for action in actions.reversed() {
                if case .send(let element) = action, element.name == "iq" { return element.attribute("id") }
            }
            return nil
        }

        var failures: [XMPPError] { actions.compactMap { if case .fail(let error) = $0 { error } else { nil } } }
    }

    static let header = "<stream:stream from='gcm.googleapis.com' id='S1' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
    static let declaration = "<?xml version='1.0' encoding='UTF-8'?>"
    static let bom = "\u{FEFF}"

    /// Both items of the failing login at once: a newline after `<success/>`, a BOM and an XML declaration
    /// before each header, and a server that redelivers upstream messages and a receipt, sends presence and
    /// IQs, before it answers the session request; in one read and byte by byte.
    @Test(arguments: [1, 3, 17, 100_000])
    func loginFromTheWireWithRestartNoiseAndEarlyTraffic(chunkSize: Int) throws {
        let wire = WireTranscript(credentials: credentials)
        try wire.receive(Self.bom + Self.declaration + Self.header
            + "<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms></stream:features>"
            + "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>\n"
            + Self.bom + Self.declaration + "\n" + Self.header.replacingOccurrences(of: "S1", with: "S2")
            + "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></stream:features>",
            chunkSize: chunkSize)
        #expect(wire.failures == [])
        #expect(wire.machine.streamID == "S2")
        let bindID = try #require(wire.lastSentIQID)
        try wire.receive("<iq type='result' id='\(bindID)'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>123456789@gcm.googleapis.com/r</jid></bind></iq>",
                         chunkSize: chunkSize)
        let sessionID = try #require(wire.lastSentIQID)
        #expect(sessionID != bindID)
        let before = wire.actions.count
        try wire.receive(
            #"<message><gcm xmlns="google:mobile:data">{"message_id":"u-1","from":"device-1","data":{}}</gcm></message>"#
                + #"<message><data:gcm xmlns:data="google:mobile:data">{"message_id":"dr2:m-1","message_type":"receipt","from":"gcm.googleapis.com"}</data:gcm></message>"#
                + "<presence from='gcm.googleapis.com'/>"
                + "<iq type='get' id='v1' from='gcm.googleapis.com'><query xmlns='jabber:iq:version'/></iq>"
                + "<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>"
                + "<iq type='result' id='stray'/>"
                + "<iq type='result' id='\(sessionID)'/>",
            chunkSize: chunkSize)
        let tail = Array(wire.actions[before...])
        #expect(wire.failures == [])
        #expect(tail.count == 7, "\(tail)")
        guard tail.count == 7 else { return }
        let delivered = tail.compactMap { if case .deliver(let stanza) = $0 { stanza.name } else { nil } }
        #expect(delivered == ["message", "message", "presence", "iq"])
        let replies = tail.compactMap { if case .send(let stanza) = $0 { stanza.attribute("type") } else { nil } }
        #expect(replies == ["error", "result"])
        #expect(tail.last == .ready(jid: "123456789@gcm.googleapis.com/r"))
    }
}

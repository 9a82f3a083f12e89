import Foundation
import Testing
import XMLStream
@testable import XMPP

/// Transcripts of events through `StreamNegotiation`, asserting the actions (RFC 6120 §4–§7).
@Suite struct StreamNegotiationTests {
    let credentials = XMPPCredentials(username: "123456789", password: Secret("s3cr3t-server-key"), jidDomain: "gcm.googleapis.com")

    // MARK: Builders

    static func header(id: String = "s1") -> XMLElement {
        XMLElement(name: "stream", namespace: XMLNamespace.stream, attributes: [.init(name: "id", value: id)])
    }
    static func features(_ children: [XMLElement]) -> XMLElement {
        XMLElement(name: "features", namespace: XMLNamespace.stream, children: children)
    }
    static func mechanisms(_ names: [String]) -> XMLElement {
        XMLElement(name: "mechanisms", namespace: XMLNamespace.sasl, children: names.map {
            XMLElement(name: "mechanism", namespace: XMLNamespace.sasl, text: $0)
        })
    }
    static let bindFeature = XMLElement(name: "bind", namespace: XMLNamespace.bind)
    static func sessionFeature(optional: Bool) -> XMLElement {
        XMLElement(name: "session", namespace: XMLNamespace.session,
                   children: optional ? [XMLElement(name: "optional", namespace: XMLNamespace.session)] : [])
    }
    static func iq(_ type: String, id: String, children: [XMLElement] = [], from: String? = nil) -> XMLElement {
        var attributes: [XMLAttribute] = [.init(name: "type", value: type), .init(name: "id", value: id)]
        if let from { attributes.append(.init(name: "from", value: from)) }
        return XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: attributes, children: children)
    }
    static func bindResult(id: String, jid: String) -> XMLElement {
        iq("result", id: id, children: [XMLElement(name: "bind", namespace: XMLNamespace.bind, children: [
            XMLElement(name: "jid", namespace: XMLNamespace.bind, text: jid)])])
    }

    /// Drives a machine to the point where it waits for SASL's outcome; returns the auth element sent.
    func toAuthenticating(_ machine: inout StreamNegotiation) -> XMLElement? {
        let domain = machine.domainForTests
        #expect(machine.start() == [.sendStreamHeader(to: domain)])
        #expect(machine.streamStarted(Self.header()) == [])
        let actions = machine.stanzaReceived(Self.features([Self.mechanisms(["X-OAUTH2", "X-GOOGLE-TOKEN", "PLAIN"])]))
        guard case .send(let auth)? = actions.first, actions.count == 1 else {
            Issue.record("expected one auth send, got \(actions)")
            return nil
        }
        return auth
    }

    /// Drives a machine through SASL and the restart; returns the bind IQ sent.
    func toBinding(_ machine: inout StreamNegotiation, features: [XMLElement] = [bindFeature]) -> XMLElement? {
        _ = toAuthenticating(&machine)
        #expect(machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl)) == [.restartStream(to: machine.domainForTests)])
        #expect(machine.streamStarted(Self.header(id: "s2")) == [])
        let actions = machine.stanzaReceived(Self.features(features))
        guard case .send(let bind)? = actions.first, actions.count == 1 else {
            Issue.record("expected one bind send, got \(actions)")
            return nil
        }
        return bind
    }

    // MARK: Happy paths

    @Test func sendsPlainWithSenderAtJIDDomainAndEmptyAuthzid() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let auth = try #require(toAuthenticating(&machine))
        #expect(auth.is("auth", XMLNamespace.sasl))
        #expect(auth.attribute("mechanism") == "PLAIN")
        let decoded = try #require(Data(base64Encoded: auth.text))
        #expect(Array(decoded) == Array("\0123456789@gcm.googleapis.com\0s3cr3t-server-key".utf8))
        #expect(machine.state == .authenticating)
    }

    @Test func fullNegotiationWithoutSessionReachesReady() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        #expect(bind.is("iq", XMLNamespace.client))
        #expect(bind.attribute("type") == "set")
        #expect(bind.child("bind", namespace: XMLNamespace.bind) != nil)
        let id = try #require(bind.attribute("id"))
        let actions = machine.stanzaReceived(Self.bindResult(id: id, jid: "123456789@gcm.googleapis.com/r1"))
        #expect(actions == [.ready(jid: "123456789@gcm.googleapis.com/r1")])
        #expect(machine.isReady)
        #expect(machine.streamID == "s2")
    }

    @Test func requestedResourceIsSentInBind() throws {
        var machine = StreamNegotiation(credentials: XMPPCredentials(username: "u", password: Secret("p"), jidDomain: "localhost", resource: "ccsd-1"))
        let bind = try #require(toBinding(&machine))
        #expect(bind.child("bind", namespace: XMLNamespace.bind)?.child("resource", namespace: XMLNamespace.bind)?.text == "ccsd-1")
    }

    @Test func mandatorySessionIsEstablishedBeforeReady() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine, features: [Self.bindFeature, Self.sessionFeature(optional: false)]))
        let actions = machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
        guard case .send(let session)? = actions.first, actions.count == 1 else {
            Issue.record("expected a session IQ, got \(actions)")
            return
        }
        #expect(session.child("session", namespace: XMLNamespace.session) != nil)
        #expect(!machine.isReady)
        #expect(machine.stanzaReceived(Self.iq("result", id: session.attribute("id")!)) == [.ready(jid: "a@b/c")])
    }

    @Test func optionalSessionIsSkipped() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine, features: [Self.bindFeature, Self.sessionFeature(optional: true)]))
        #expect(machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c")) == [.ready(jid: "a@b/c")])
    }

    /// A refused session is reported, not fatal: the session is a no-op (RFC 6121 Appendix E), and failing
    /// would keep ccsd from ever logging in to that server (issue 7 item 2).
    @Test func sessionErrorIsANoticeThenReady() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine, features: [Self.bindFeature, Self.sessionFeature(optional: false)]))
        let actions = machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
        guard case .send(let session)? = actions.first else { Issue.record("no session IQ"); return }
        let refusal = Self.iq("error", id: session.attribute("id")!, children: [
            XMLElement(name: "error", namespace: XMLNamespace.client, attributes: [.init(name: "type", value: "cancel")],
                       children: [XMLElement(name: "forbidden", namespace: XMLNamespace.stanzas)])])
        let outcome = machine.stanzaReceived(refusal)
        guard outcome.count == 2, case .notice(let error) = outcome[0] else { Issue.record("expected a notice, got \(outcome)"); return }
        #expect(error.kind == .sessionFailed)
        #expect(error.condition == "forbidden")
        #expect(outcome[1] == .ready(jid: "a@b/c"))
        #expect(machine.isReady)
    }

    // MARK: Failure paths

    @Test func saslFailureIsAnAuthenticationErrorWithoutTheKey() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = toAuthenticating(&machine)
        let failure = XMLElement(name: "failure", namespace: XMLNamespace.sasl, children: [XMLElement(name: "not-authorized", namespace: XMLNamespace.sasl)])
        let actions = machine.stanzaReceived(failure)
        guard case .fail(let error)? = actions.last, actions.count == 2, actions.first == .sendStreamFooter else {
            Issue.record("expected fail, got \(actions)")
            return
        }
        #expect(error.kind == .authenticationFailed)
        #expect(error.condition == "not-authorized")
        #expect(error.isConfigurationError)
        #expect(error.description.contains("123456789@gcm.googleapis.com"))
        #expect(!error.description.contains("s3cr3t"))
        #expect(!String(describing: credentials).contains("s3cr3t"))
        // Terminal: nothing more comes out.
        #expect(machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl)) == [])
        #expect(machine.state == .failed)
    }

    @Test func noPlainMechanismFails() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(Self.header())
        let actions = machine.stanzaReceived(Self.features([Self.mechanisms(["SCRAM-SHA-1", "X-OAUTH2"])]))
        guard case .fail(let error)? = actions.last else { Issue.record("expected fail"); return }
        #expect(error.kind == .noSupportedMechanism)
        #expect(error.message.contains("SCRAM-SHA-1"))
    }

    @Test func featuresWithoutMechanismsFail() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(Self.header())
        guard case .fail(let error)? = machine.stanzaReceived(Self.features([])).last else { Issue.record("expected fail"); return }
        #expect(error.kind == .noSupportedMechanism)
    }

    @Test func saslChallengeForPlainFails() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = toAuthenticating(&machine)
        guard case .fail(let error)? = machine.stanzaReceived(XMLElement(name: "challenge", namespace: XMLNamespace.sasl)).last
        else { Issue.record("expected fail"); return }
        #expect(error.kind == .unexpectedStanza)
    }

    @Test func bindErrorFailsWithCondition() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        let errorIQ = Self.iq("error", id: bind.attribute("id")!, children: [
            XMLElement(name: "error", namespace: XMLNamespace.client, attributes: [.init(name: "type", value: "cancel")],
                       children: [XMLElement(name: "not-allowed", namespace: XMLNamespace.stanzas)])])
        guard case .fail(let error)? = machine.stanzaReceived(errorIQ).last else { Issue.record("expected fail"); return }
        #expect(error.kind == .bindFailed)
        #expect(error.condition == "not-allowed")
    }

    @Test func bindResultWithoutJIDFails() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        guard case .fail(let error)? = machine.stanzaReceived(Self.iq("result", id: bind.attribute("id")!)).last
        else { Issue.record("expected fail"); return }
        #expect(error.kind == .bindFailed)
    }

    @Test func postAuthFeaturesWithoutBindFail() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = toAuthenticating(&machine)
        _ = machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl))
        _ = machine.streamStarted(Self.header())
        guard case .fail(let error)? = machine.stanzaReceived(Self.features([])).last else { Issue.record("expected fail"); return }
        #expect(error.kind == .bindFailed)
    }

    @Test func nonzaBeforeFeaturesIsUnexpected() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(Self.header())
        guard case .fail(let error)? = machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl)).last
        else { Issue.record("expected fail"); return }
        #expect(error.kind == .unexpectedStanza)
        #expect(error.message.contains("expected stream features, got <success>"))
    }

    @Test func stanzaBeforeHeaderIsUnexpected() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        guard case .fail(let error)? = machine.stanzaReceived(Self.features([])).last else { Issue.record("expected fail"); return }
        #expect(error.kind == .unexpectedStanza)
    }

    @Test(arguments: ["conflict", "policy-violation", "invalid-xml", "system-shutdown", "see-other-host"])
    func streamErrorIsReportedByName(condition: String) throws {
        // In every state: before auth, and when ready.
        for ready in [false, true] {
            var machine = StreamNegotiation(credentials: credentials)
            if ready {
                let bind = try #require(toBinding(&machine))
                _ = machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
                #expect(machine.isReady)
            } else {
                _ = machine.start()
                _ = machine.streamStarted(Self.header())
            }
            let streamError = XMLElement(name: "error", namespace: XMLNamespace.stream, children: [
                XMLElement(name: condition, namespace: XMLNamespace.streams),
                XMLElement(name: "text", namespace: XMLNamespace.streams, text: "bye")])
            let actions = machine.stanzaReceived(streamError)
            #expect(actions == [.sendStreamFooter, .fail(XMPPError(.streamError, condition: condition, message: "bye"))])
        }
    }

    @Test func serverStreamEndIsACleanEnd() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        _ = machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
        #expect(machine.streamEnded() == [.sendStreamFooter, .fail(XMPPError(.streamClosedByPeer, message: ""))])
        #expect(machine.streamEnded() == [])
    }

    @Test func externalFailureIsReportedOnce() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        let error = XMPPError(.negotiationTimedOut, message: "10 s")
        #expect(machine.failExternally(error) == [.sendStreamFooter, .fail(error)])
        #expect(machine.failExternally(error) == [])
        #expect(machine.streamStarted(Self.header()) == [])
    }

    // MARK: Ready: pings, unknown IQs, delivery

    func readyMachine() throws -> StreamNegotiation {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        _ = machine.stanzaReceived(Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c"))
        return machine
    }

    @Test func answersPingWithResultOfSameID() throws {
        var machine = try readyMachine()
        let ping = Self.iq("get", id: "p-77", children: [XMLElement(name: "ping", namespace: XMLNamespace.ping)], from: "gcm.googleapis.com")
        let actions = machine.stanzaReceived(ping)
        #expect(actions == [.send(XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: [
            .init(name: "type", value: "result"), .init(name: "id", value: "p-77"), .init(name: "to", value: "gcm.googleapis.com")]))])
    }

    @Test(arguments: ["get", "set"])
    func unknownIQIsServiceUnavailable(type: String) throws {
        var machine = try readyMachine()
        let query = Self.iq(type, id: "q-1", children: [XMLElement(name: "query", namespace: "jabber:iq:version")])
        let actions = machine.stanzaReceived(query)
        guard case .send(let reply)? = actions.first, actions.count == 1 else { Issue.record("expected a reply, got \(actions)"); return }
        #expect(reply.attribute("type") == "error")
        #expect(reply.attribute("id") == "q-1")
        #expect(StreamNegotiation.stanzaErrorCondition(reply) == "service-unavailable")
    }

    @Test func messagesAndIQResultsAreDelivered() throws {
        var machine = try readyMachine()
        let message = XMLElement(name: "message", namespace: XMLNamespace.client, children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: "{}")])
        #expect(machine.stanzaReceived(message) == [.deliver(message)])
        let result = Self.iq("result", id: "ping-9")
        #expect(machine.stanzaReceived(result) == [.deliver(result)])
    }

    @Test func pingDuringNegotiationIsAnswered() throws {
        var machine = StreamNegotiation(credentials: credentials)
        _ = toAuthenticating(&machine)
        let ping = Self.iq("get", id: "early", children: [XMLElement(name: "ping", namespace: XMLNamespace.ping)])
        let actions = machine.stanzaReceived(ping)
        guard case .send(let reply)? = actions.first, actions.count == 1 else { Issue.record("expected a pong, got \(actions)"); return }
        #expect(reply.attribute("type") == "result")
        #expect(reply.attribute("id") == "early")
        #expect(machine.state == .authenticating)
    }

    @Test func bindResultWithoutDefaultNamespaceIsAccepted() throws {
        var machine = StreamNegotiation(credentials: credentials)
        let bind = try #require(toBinding(&machine))
        var result = Self.bindResult(id: bind.attribute("id")!, jid: "a@b/c")
        result.namespace = nil
        #expect(machine.stanzaReceived(result) == [.ready(jid: "a@b/c")])
    }

    @Test func pingsHaveFreshIDs() throws {
        var machine = try readyMachine()
        let a = machine.makePing(), b = machine.makePing()
        #expect(a.child("ping", namespace: XMLNamespace.ping) != nil)
        #expect(a.attribute("type") == "get")
        #expect(a.attribute("id") != b.attribute("id"))
    }
}

@Suite struct KeepaliveTests {
    @Test func pingsOnceAfterIntervalThenDeclaresDeadPeer() {
        var keepalive = Keepalive(pingInterval: 30, deadPeerTimeout: 90, now: 0)
        #expect(keepalive.nextCheck() == 30)
        #expect(keepalive.check(at: 29.9) == .none)
        #expect(keepalive.check(at: 30) == .sendPing)
        #expect(keepalive.check(at: 31) == .none)
        #expect(keepalive.nextCheck() == 90)
        #expect(keepalive.check(at: 90) == .deadPeer)
    }

    @Test func inboundBytesResetTheClock() {
        var keepalive = Keepalive(pingInterval: 30, deadPeerTimeout: 90, now: 0)
        #expect(keepalive.check(at: 30) == .sendPing)
        keepalive.received(at: 40)
        #expect(keepalive.check(at: 69) == .none)
        #expect(keepalive.check(at: 70) == .sendPing)
        #expect(keepalive.check(at: 129) == .none)
        #expect(keepalive.check(at: 130) == .deadPeer)
    }
}

extension StreamNegotiation {
    var domainForTests: String { credentials.jidDomain }
}

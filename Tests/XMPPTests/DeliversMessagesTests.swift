import Testing
import XMLStream
@testable import XMPP

/// `StreamNegotiation.deliversMessages`, which `XMPPClient` asks before handing a payload stanza over without
/// an element, says exactly when `stanzaReceived` answers a `<message>` with `[.deliver(message)]` alone and
/// changes nothing: in every state, with and without a close requested, for messages in any namespace.
@Suite struct DeliversMessagesTests {
    typealias T = StreamNegotiationTests
    let credentials = XMPPCredentials(username: "123456789", password: Secret("s3cr3t-server-key"), jidDomain: "gcm.googleapis.com")

    static let messages = [
        EarlyStanzaTests.ack,
        XMLElement(name: "message", children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: "{}")]),
        XMLElement(name: "message", namespace: "urn:other", children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: "{}")]),
    ]

    /// A machine in every state of a login with a session, then failed; each also with `close()` requested.
    func machines() throws -> [StreamNegotiation] {
        var states: [StreamNegotiation] = []
        var machine = StreamNegotiation(credentials: credentials)
        states.append(machine)
        _ = machine.start()
        states.append(machine)
        _ = machine.streamStarted(T.header())
        states.append(machine)
        _ = machine.stanzaReceived(T.features([T.mechanisms(["PLAIN"])]))
        states.append(machine)
        _ = machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl))
        states.append(machine)
        _ = machine.streamStarted(T.header(id: "s2"))
        states.append(machine)
        let bindActions = machine.stanzaReceived(T.features([T.bindFeature, T.sessionFeature(optional: false)]))
        states.append(machine)
        guard case .send(let bind)? = bindActions.first else { throw Failure(description: "no bind request: \(bindActions)") }
        let sessionActions = machine.stanzaReceived(T.bindResult(id: try #require(bind.attribute("id")), jid: "a@b/c"))
        states.append(machine)
        guard case .send(let session)? = sessionActions.first else { throw Failure(description: "no session request: \(sessionActions)") }
        _ = machine.stanzaReceived(T.iq("result", id: try #require(session.attribute("id"))))
        #expect(machine.isReady)
        states.append(machine)
        _ = machine.failExternally(XMPPError(.transport, message: "gone"))
        states.append(machine)
        return states + states.map { machine in
            var closing = machine
            _ = closing.close()
            return closing
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    @Test func deliversMessagesIsWhatStanzaReceivedDoesWithAMessage() throws {
        let machines = try machines()
        for machine in machines {
            for message in Self.messages {
                var probe = machine
                let actions = probe.stanzaReceived(message)
                let deliveredAsIs = actions == [.deliver(message)] && probe.state == machine.state
                    && probe.ignoredBeforeBind == machine.ignoredBeforeBind && probe.streamOpen == machine.streamOpen
                #expect(machine.deliversMessages == deliveredAsIs, "\(machine.state) close \(machine.closeRequested) \(message)")
            }
        }
        // binding, establishing the session and ready; ready once more with a close requested.
        #expect(machines.filter(\.deliversMessages).count == 4)
    }
}

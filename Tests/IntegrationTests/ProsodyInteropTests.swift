import Foundation
import TLS
import Testing
import XMLStream
import XMPP

/// The XMPP layer against a real third-party server: Prosody on 127.0.0.1 with direct TLS, started by
/// `scripts/test` (scripts/prosody-test-server), which exports CCSD_PROSODY_*. With CCSD_REQUIRE_PROSODY=1
/// (as the test command sets) a missing server fails the test instead of skipping it.
@Suite(.serialized) struct ProsodyInteropTests {
    struct Server {
        var port: Int
        var caFile: String
        var user: String
        var password: String
        var domain: String
    }

    static var server: Server? {
        let env = ProcessInfo.processInfo.environment
        guard let port = env["CCSD_PROSODY_PORT"].flatMap(Int.init), let ca = env["CCSD_PROSODY_CA"],
              let user = env["CCSD_PROSODY_USER"], let password = env["CCSD_PROSODY_PASSWORD"],
              let domain = env["CCSD_PROSODY_DOMAIN"] else { return nil }
        return Server(port: port, caFile: ca, user: user, password: password, domain: domain)
    }

    static var enabled: Bool {
        server != nil || ProcessInfo.processInfo.environment["CCSD_REQUIRE_PROSODY"] == "1"
    }

    /// Collects what an `XMPPClient` reports.
    final class Recorder: XMPPClientDelegate {
        var jid: String?
        var stanzas: [XMLElement] = []
        var ended: XMPPError?
        func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) { self.jid = jid }
        func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) { stanzas.append(stanza) }
        func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) { ended = error }
    }

    func connect(_ server: Server, password: String? = nil, loop: EventLoop, recorder: Recorder) -> LoopBound<XMPPClient> {
        loop.submitAndWait {
            let configuration = XMPPClientConfiguration(
                host: "localhost", port: server.port,
                credentials: XMPPCredentials(username: server.user, password: Secret(password ?? server.password),
                                             jidDomain: server.domain, resource: "ccsd-interop",
                                             authenticationIdentity: server.user),
                tls: TLSClientConfiguration(caFile: server.caFile))
            let client = XMPPClient(configuration: configuration, on: loop, delegate: recorder)
            client.start()
            return LoopBound(client, eventLoop: loop)
        }
    }

    @Test(.enabled(if: enabled)) func loginBindPingAndMessageToOwnJID() async throws {
        let server = try #require(Self.server, "Prosody is not running: run scripts/test, which starts it")
        let loop = EventLoop(label: "prosody-interop")
        let recorder = Recorder()
        let client = connect(server, loop: loop, recorder: recorder)
        let loggedIn = await waitUntil("login", timeout: 15) { loop.submitAndWait { recorder.jid != nil || recorder.ended != nil } }
        guard loggedIn else { return }
        let jid = try #require(loop.submitAndWait { recorder.jid }, "login failed: \(String(describing: loop.submitAndWait { recorder.ended }))")
        #expect(jid == "\(server.user)@\(server.domain)/ccsd-interop")

        // XEP-0199 ping to the server: the result comes back with our id.
        loop.submitAndWait {
            _ = client.value.send(raw: "<iq type='get' id='interop-ping-1' to='\(server.domain)'><ping xmlns='urn:xmpp:ping'/></iq>")
        }
        await waitUntil("ping result", timeout: 15) { loop.submitAndWait {
            recorder.stanzas.contains { $0.is("iq", XMLNamespace.client) && $0.attribute("id") == "interop-ping-1" && $0.attribute("type") == "result" }
        } }

        // A message to our own full JID comes back, text intact (Prosody writes &quot; and single quotes).
        let body = "ccsd <interop> & \"quotes\" 'apostrophes' 😀"
        loop.submitAndWait {
            let message = XMLElement(name: "message", namespace: XMLNamespace.client,
                                     attributes: [.init(name: "to", value: jid), .init(name: "type", value: "chat"), .init(name: "id", value: "self-1")],
                                     children: [XMLElement(name: "body", namespace: XMLNamespace.client, text: body)])
            _ = client.value.send(message)
        }
        await waitUntil("message back", timeout: 15) { loop.submitAndWait {
            recorder.stanzas.contains { $0.is("message", XMLNamespace.client) && $0.attribute("id") == "self-1" }
        } }
        let echoed = loop.submitAndWait { recorder.stanzas.first { $0.attribute("id") == "self-1" } }
        #expect(echoed?.child("body", namespace: XMLNamespace.client)?.text == body)
        #expect(echoed?.attribute("from") == jid)

        loop.submitAndWait { client.value.close() }
        await waitUntil("clean close", timeout: 15) { loop.submitAndWait { recorder.ended != nil } }
        #expect(loop.submitAndWait { recorder.ended?.kind } == .closedLocally)
    }

    @Test(.enabled(if: enabled)) func wrongPasswordIsAnAuthenticationError() async throws {
        let server = try #require(Self.server, "Prosody is not running: run scripts/test, which starts it")
        let loop = EventLoop(label: "prosody-interop-auth")
        let recorder = Recorder()
        let client = connect(server, password: "wrong-password", loop: loop, recorder: recorder)
        defer { withExtendedLifetime(client) {} }
        await waitUntil("auth failure", timeout: 15) { loop.submitAndWait { recorder.ended != nil } }
        let error = try #require(loop.submitAndWait { recorder.ended })
        #expect(error.kind == .authenticationFailed)
        #expect(error.condition == "not-authorized")
        #expect(!error.description.contains("wrong-password"))
        #expect(loop.submitAndWait { recorder.jid } == nil)
    }
}

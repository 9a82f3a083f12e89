import Certificates
import Foundation
import Testing
import TLS
import XMLStream
import XMPP

/// `XMPPClient` against a scripted server over real TLS on loopback, both on one event loop so that the
/// client's `close()` can come exactly while the server's SASL answer is on its way. The server keeps what
/// the client wrote after its answer: that is the stream the server is in. Before the fix the client
/// wrote `</stream:stream>` at once on `close()`, so after `<success/>` (the server had restarted its
/// stream) the footer came before any header: not-well-formed; and after a `<failure/>` the client closed
/// TLS without a footer.
@Suite struct StreamCloseServerTests {
    /// The scripted server: header and PLAIN on the first stream, then `outcome` to the `<auth>`, then
    /// `afterOutcome` (on the loop, before the client can read the outcome). It answers the client's
    /// footer with its own and closes.
    final class Server: TLSConnectionDelegate, @unchecked Sendable {
        // @unchecked Sendable: touched only on the loop, and read by the test after `closed` (through the loop).
        let outcome: String
        var afterOutcome: () -> Void = {}
        var text = ""
        /// Offset in `text` where the bytes after the SASL answer begin.
        var outcomeAt: Int?
        var closed = false
        var connection: TLSConnection?
        static let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
            + "xmlns:stream='http://etherx.jabber.org/streams' id='s1' from='localhost' version='1.0'>"

        init(outcome: String) { self.outcome = outcome }

        var afterAnswer: String { outcomeAt.map { String(text.dropFirst($0)) } ?? "" }

        func tlsConnectionDidBecomeReady(_ connection: TLSConnection) {}

        func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
            text += String(decoding: bytes, as: UTF8.self)
            if outcomeAt == nil, text.contains("<stream:stream"), !text.contains("<auth"), !text.contains("mechanisms-sent") {
                try? connection.write(Self.header + "<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
                                      + "<mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>")
                text += "<!--mechanisms-sent-->"
            }
            if outcomeAt == nil, text.contains("</auth>") {
                try? connection.write(outcome)
                outcomeAt = text.count
                afterOutcome()
            }
            if outcomeAt != nil, afterAnswer.contains("</stream:stream>") {
                // Our side of the stream the client closed: a header first if it was the restarted one.
                try? connection.write((afterAnswer.contains("<stream:stream") ? Self.header : "") + "</stream:stream>")
                connection.close()
            }
        }

        func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) { closed = true }
    }

    final class Recorder: XMPPClientDelegate {
        var ended: XMPPError?
        func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) {}
        func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) {}
        func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) { ended = error }
    }

    struct Run {
        let loop: EventLoop
        let server: Server
        let recorder: Recorder
        let client: LoopBound<XMPPClient>
        let listener: LoopBound<TLSServer>
    }

    /// Starts the server and a client on one loop; `closeOnOutcome` makes the client close right after the
    /// server wrote its SASL answer.
    static func start(outcome: String, closeOnOutcome: Bool) throws -> Run {
        let ca = try CertificateAuthority.generate()
        let leaf = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let caFile = NSTemporaryDirectory() + "ccsd-close-\(UUID().uuidString).pem"
        try ca.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let loop = EventLoop(label: "stream-close")
        let server = Server(outcome: outcome)
        let recorder = Recorder()
        return try loop.submitAndWait { () throws -> Run in
            let listener = try TLSServer(
                configuration: TLSServerConfiguration(certificateChainPEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM),
                on: loop) { connection in
                    connection.delegate = server
                    server.connection = connection
                }
            let configuration = XMPPClientConfiguration(
                host: "localhost", port: listener.port,
                credentials: XMPPCredentials(username: "123456789012", password: Secret("close-test-key"), jidDomain: "localhost"),
                tls: TLSClientConfiguration(caFile: caFile, connectTimeout: 5, handshakeTimeout: 5), closeGrace: 5)
            let client = XMPPClient(configuration: configuration, on: loop, delegate: recorder)
            if closeOnOutcome { server.afterOutcome = { client.close() } }
            client.start()
            return Run(loop: loop, server: server, recorder: recorder, client: LoopBound(client, eventLoop: loop),
                       listener: LoopBound(listener, eventLoop: loop))
        }
    }

    @Test func closeWhileSuccessIsOnItsWayOpensTheRestartedStreamBeforeItsFooter() async throws {
        let run = try Self.start(outcome: "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>", closeOnOutcome: true)
        defer { run.loop.submitAndWait { run.listener.value.close() } }
        await waitUntil("the client ended", timeout: 10) { run.loop.submitAndWait { run.recorder.ended != nil } }
        let after = run.loop.submitAndWait { run.server.afterAnswer }
        #expect(run.loop.submitAndWait { run.recorder.ended?.kind } == .closedLocally)
        // The restarted stream, as the server reads it: a header, then the footer, nothing else.
        let header = after.range(of: "<stream:stream")
        let footer = after.range(of: "</stream:stream>")
        #expect(header != nil, "no stream header on the restarted stream before the footer: \(after)")
        #expect(footer != nil, "no footer: \(after)")
        if let header, let footer { #expect(header.lowerBound < footer.lowerBound, "footer before header: \(after)") }
        #expect(after.components(separatedBy: "</stream:stream>").count == 2, "footers: \(after)")
        #expect(!after.contains("<iq"), "a bind request after close(): \(after)")
        // The first stream got no footer of ours after the server left it.
        let before = run.loop.submitAndWait { String(run.server.text.prefix(run.server.outcomeAt ?? 0)) }
        #expect(!before.contains("</stream:stream>"))
    }

    @Test func aSASLFailureClosesTheStreamBeforeTLS() async throws {
        let run = try Self.start(
            outcome: "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/></failure>", closeOnOutcome: false)
        defer { run.loop.submitAndWait { run.listener.value.close() } }
        await waitUntil("the client ended", timeout: 10) { run.loop.submitAndWait { run.recorder.ended != nil } }
        await waitUntil("the server saw the connection close", timeout: 10) { run.loop.submitAndWait { run.server.closed } }
        #expect(run.loop.submitAndWait { run.recorder.ended?.kind } == .authenticationFailed)
        let after = run.loop.submitAndWait { run.server.afterAnswer }
        #expect(after == "</stream:stream>", "after the SASL failure the client wrote: \(after)")
    }

    @Test func closeWhileFailureIsOnItsWayClosesTheFirstStreamOnce() async throws {
        let run = try Self.start(
            outcome: "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/></failure>", closeOnOutcome: true)
        defer { run.loop.submitAndWait { run.listener.value.close() } }
        await waitUntil("the client ended", timeout: 10) { run.loop.submitAndWait { run.recorder.ended != nil } }
        await waitUntil("the server saw the connection close", timeout: 10) { run.loop.submitAndWait { run.server.closed } }
        #expect(run.loop.submitAndWait { run.recorder.ended?.kind } == .closedLocally)
        #expect(run.loop.submitAndWait { run.server.afterAnswer } == "</stream:stream>")
    }
}

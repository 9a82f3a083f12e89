import Testing
import Certificates
@testable import TLS

/// The engine alone: two engines exchange ciphertext in memory, no sockets.
@Suite struct TLSEngineTests {
    /// Moves ciphertext between the engines until both handshakes complete (bounded rounds).
    static func handshake(_ client: TLSEngine, _ server: TLSEngine) throws {
        for _ in 0..<10 {
            let clientDone = try client.handshake() == .complete
            server.feedCiphertext(client.takeCiphertext())
            let serverDone = try server.handshake() == .complete
            client.feedCiphertext(server.takeCiphertext())
            if clientDone && serverDone { return }
        }
        Issue.record("handshake did not complete in 10 rounds")
    }

    static func readAll(_ engine: TLSEngine) throws -> (bytes: [UInt8], closeNotify: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<10_000 {
            let result = try buffer.withUnsafeMutableBytes { try engine.readPlaintext(into: $0) }
            switch result {
            case .bytes(let n): out += buffer[..<n]
            case .wantRead: return (out, false)
            case .closeNotify: return (out, true)
            }
        }
        Issue.record("read did not finish")
        return (out, false)
    }

    func engines(host: String = "localhost") throws -> (TLSEngine, TLSEngine) {
        let fixtures = try Fixtures.make()
        let client = try TLSEngine.client(context: .client(configuration: fixtures.client()), host: host)
        let server = try TLSEngine.server(context: .server(configuration: fixtures.server))
        return (client, server)
    }

    @Test func handshakeThenPlaintextBothWaysThenCloseNotify() throws {
        let (client, server) = try engines()
        #expect(!client.isHandshakeComplete)
        try Self.handshake(client, server)
        #expect(client.isHandshakeComplete && server.isHandshakeComplete)
        #expect(client.negotiatedProtocol == "TLSv1.3")

        // 100 000 bytes: several 16 KiB records each way.
        let upstream = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try upstream.withUnsafeBytes { try client.writePlaintext($0) }
        let ciphertext = client.takeCiphertext()
        #expect(ciphertext.count > upstream.count)  // record headers and tags
        #expect(ciphertext.count < upstream.count + 7 * 64)
        #expect(client.pendingCiphertextCount == 0)
        #expect(!ciphertext.starts(with: upstream.prefix(64)))  // encrypted, not plain
        server.feedCiphertext(ciphertext)
        let atServer = try Self.readAll(server)
        #expect(atServer.bytes == upstream)
        #expect(!atServer.closeNotify)

        let downstream = Array("hello from the server, ".utf8) + [UInt8](repeating: 0x5a, count: 40_000)
        try downstream.withUnsafeBytes { try server.writePlaintext($0) }
        client.feedCiphertext(server.takeCiphertext())
        #expect(try Self.readAll(client).bytes == downstream)

        client.shutdown()
        #expect(client.sentCloseNotify)
        server.feedCiphertext(client.takeCiphertext())
        let end = try Self.readAll(server)
        #expect(end.bytes.isEmpty)
        #expect(end.closeNotify)
        #expect(server.receivedCloseNotify)
        #expect(throws: TLSError.self) { try [1, 2, 3].withUnsafeBytes { try client.writePlaintext($0) } }
    }

    /// `pendingCiphertextCount` answers 0 without asking the output BIO while the engine knows it empty; every
    /// call that may write to it makes the engine ask again. A read that fails on a corrupted record writes
    /// the fatal alert for the peer: the count must see it (and `takeCiphertext` take it) after the output was
    /// drained, as after a write, a handshake step and a shutdown.
    @Test func pendingCiphertextIsSeenAfterEveryCallThatMayWriteIt() throws {
        let (client, server) = try engines()
        try Self.handshake(client, server)
        #expect(client.pendingCiphertextCount == 0 && server.pendingCiphertextCount == 0)
        _ = try Self.readAll(client)  // the server's session tickets, if any
        _ = client.takeCiphertext()
        #expect(client.pendingCiphertextCount == 0)

        try [1, 2, 3].withUnsafeBytes { try client.writePlaintext($0) }
        let written = client.pendingCiphertextCount
        #expect(written > 3)
        var record = client.takeCiphertext()
        #expect(record.count == written)
        #expect(client.pendingCiphertextCount == 0)

        record[record.count - 1] ^= 0xFF  // the tag no longer matches
        server.feedCiphertext(record)
        #expect(server.pendingCiphertextCount == 0)
        #expect(throws: TLSError.self) { _ = try Self.readAll(server) }
        let alert = server.pendingCiphertextCount
        #expect(alert > 0, "the read's alert for the peer")
        #expect(server.takeCiphertext().count == alert)
        #expect(server.pendingCiphertextCount == 0)

        client.shutdown()
        #expect(client.pendingCiphertextCount > 0, "the close_notify")
    }

    @Test func ciphertextFedInTinyPiecesStillDecrypts() throws {
        let (client, server) = try engines()
        try Self.handshake(client, server)
        let message = Array("<message id='m-1'/>".utf8)
        try message.withUnsafeBytes { try client.writePlaintext($0) }
        var received: [UInt8] = []
        for byte in client.takeCiphertext() {
            [byte].withUnsafeBytes { server.feedCiphertext($0) }
            received += try Self.readAll(server).bytes
        }
        #expect(received == message)
    }

    @Test func wrongHostNameFailsVerificationAndServerSeesTheAlert() throws {
        let (client, server) = try engines(host: "fcm-xmpp.googleapis.com")
        var clientError: TLSError?
        var serverError: TLSError?
        for _ in 0..<10 where clientError == nil || serverError == nil {
            do { _ = try client.handshake() } catch { clientError = error }
            server.feedCiphertext(client.takeCiphertext())
            if serverError == nil {
                do { _ = try server.handshake() } catch { serverError = error }
            }
            client.feedCiphertext(server.takeCiphertext())
        }
        #expect(clientError?.kind == .certificateVerificationFailed)
        #expect(clientError?.reason == "hostname mismatch")
        #expect(clientError?.description == "TLS certificate verification failed for fcm-xmpp.googleapis.com: hostname mismatch")
        #expect(serverError?.kind == .handshakeFailed)
        #expect(serverError?.reason.contains("alert") == true)
    }

    @Test func contextRoleIsChecked() throws {
        let fixtures = try Fixtures.make()
        let clientContext = try TLSContext.client(configuration: fixtures.client())
        #expect(throws: TLSError.self) { try TLSEngine.server(context: clientContext) }
    }

    @Test func missingCAFileIsAConfigurationError() {
        #expect {
            try TLSContext.client(configuration: TLSClientConfiguration(caFile: "/nonexistent/ca.pem"))
        } throws: { error in
            (error as? TLSError)?.kind == .configuration && (error as? TLSError)?.reason.contains("/nonexistent/ca.pem") == true
        }
    }

    @Test func mismatchedServerKeyIsAConfigurationError() throws {
        let fixtures = try Fixtures.make()
        let other = try CertificateAuthority.generate()
        let bad = TLSServerConfiguration(certificateChainPEM: fixtures.server.certificateChainPEM, privateKeyPEM: other.privateKeyPEM)
        #expect { try TLSContext.server(configuration: bad) } throws: { ($0 as? TLSError)?.kind == .configuration }
    }

    @Test func ipLiteralDetection() {
        #expect(TLSEngine.isIPLiteral("127.0.0.1"))
        #expect(TLSEngine.isIPLiteral("::1"))
        #expect(!TLSEngine.isIPLiteral("localhost"))
        #expect(!TLSEngine.isIPLiteral("fcm-xmpp.googleapis.com"))
    }
}

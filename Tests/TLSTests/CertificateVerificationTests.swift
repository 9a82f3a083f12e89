import Testing
import Certificates
import TLS

/// A failed verification is an error naming the host and OpenSSL's reason; never a silent fallback.
@Suite struct CertificateVerificationTests {
    /// Connects to a server presenting `server` and returns the client's close error (nil if it became ready).
    func failure(server configuration: TLSServerConfiguration, host: String = "localhost",
                 client: TLSClientConfiguration) async throws -> (client: TLSError?, server: TLSError?) {
        let loop = EventLoop(label: "test.verify")
        let server = try ServerHarness(loop: loop, configuration: configuration, recorder: Recorder())
        defer { server.stop() }
        let recorder = Recorder()
        _ = try await connectClient(loop, host: host, port: server.port, configuration: client, recorder: recorder)
        let error = try await recorder.log.readyOrFailure()
        #expect(!recorder.log.snapshot.contains(.ready))
        let serverError = error == nil ? nil : try await server.recorder.log.closeError()
        return (error, serverError)
    }

    @Test func wrongHostNameIsAHostnameMismatch() async throws {
        let fixtures = try Fixtures.make(dnsNames: ["fcm-xmpp.googleapis.com"], ipAddresses: [])
        let (error, serverError) = try await failure(server: fixtures.server, client: fixtures.client())
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("hostname mismatch") == true)
        #expect(error?.description == "TLS certificate verification failed for localhost: hostname mismatch")
        #expect(serverError?.kind == .handshakeFailed)  // the client's alert reached the server
    }

    @Test func ipLiteralNotInTheCertificateIsAnIPMismatch() async throws {
        let fixtures = try Fixtures.make(dnsNames: ["localhost"], ipAddresses: [])
        let (error, _) = try await failure(server: fixtures.server, host: "127.0.0.1", client: fixtures.client())
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("IP address mismatch") == true)
    }

    @Test func certificateFromAnotherCAIsUnknownIssuer() async throws {
        let fixtures = try Fixtures.make()
        let otherCAFile = try writeTemporary(try CertificateAuthority.generate(commonName: "other CA").certificatePEM)
        let (error, _) = try await failure(server: fixtures.server, client: fixtures.client { $0.caFile = otherCAFile })
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("unable to get local issuer certificate") == true)
    }

    @Test func selfSignedServerCertificateIsRejected() async throws {
        let fixtures = try Fixtures.make()
        let selfSigned = try CertificateAuthority.selfSignedServerCertificate(dnsNames: ["localhost"])
        let configuration = TLSServerConfiguration(certificateChainPEM: selfSigned.certificatePEM, privateKeyPEM: selfSigned.privateKeyPEM)
        let (error, _) = try await failure(server: configuration, client: fixtures.client())
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("self-signed certificate") == true)
    }

    @Test func expiredCertificateIsRejected() async throws {
        let fixtures = try Fixtures.make(notBeforeOffset: -7200, notAfterOffset: -3600)
        let (error, _) = try await failure(server: fixtures.server, client: fixtures.client())
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("certificate has expired") == true)
    }

    @Test func systemStoreDoesNotTrustATestCA() async throws {
        let fixtures = try Fixtures.make()
        let (error, _) = try await failure(server: fixtures.server, client: fixtures.client { $0.caFile = nil })
        #expect(error?.kind == .certificateVerificationFailed)
        #expect(error?.reason.contains("unable to get local issuer certificate") == true)
    }

    /// A CA bundle rotated in place is read again on the next connect (no stale cached trust).
    @Test func rotatedCAFileIsReadAgain() async throws {
        let old = try Fixtures.make()
        let new = try Fixtures.make()
        let shared = try writeTemporary(old.ca.certificatePEM)
        let (first, _) = try await failure(server: new.server, client: old.client { $0.caFile = shared })
        #expect(first?.kind == .certificateVerificationFailed)
        // Replace the bundle's content (a different size and time): the new server is now trusted.
        try (new.ca.certificatePEM + "\n").write(toFile: shared, atomically: true, encoding: .utf8)
        let loop = EventLoop(label: "test.rotate")
        let server = try ServerHarness(loop: loop, configuration: new.server, recorder: Recorder())
        defer { server.stop() }
        let recorder = Recorder()
        _ = try await connectClient(loop, host: "localhost", port: server.port, configuration: new.client { $0.caFile = shared }, recorder: recorder)
        #expect(try await recorder.log.readyOrFailure() == nil)
    }
}

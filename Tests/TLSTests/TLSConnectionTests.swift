import Testing
import Glibc
@testable import TLS

/// Client and server over loopback sockets with a throwaway CA.
@Suite struct TLSConnectionTests {
    @Test(arguments: ["localhost", "127.0.0.1"])
    func goodCertificateConnectsEchoesAndClosesCleanly(host: String) async throws {
        let loop = EventLoop(label: "test.echo")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder(echo: true))
        defer { server.stop() }
        let client = Recorder()
        let connection = try await connectClient(loop, host: host, port: server.port, configuration: fixtures.client(), recorder: client)
        // Written before the handshake completes: queued, then sent first.
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await loop.submit { try payload.withUnsafeBytes { try connection.value.write($0) } }
        #expect(try await client.log.readyOrFailure() == nil)
        #expect(try await loop.submit { connection.value.negotiatedProtocol } == "TLSv1.3")
        #expect(try await loop.submit { connection.value.remoteDescription } == "\(host):\(server.port)")
        let echoed = try await client.log.received(atLeast: payload.count)
        #expect(echoed == payload)

        let closing = ContinuousClock.now
        try await loop.submit { connection.value.close() }
        #expect(try await client.log.closeError() == nil)
        #expect(try await server.recorder.log.closeError() == nil)  // it saw our close_notify
        #expect(ContinuousClock.now - closing < .seconds(1))  // by EOF, not by the 2 s grace
        await #expect(throws: TLSError(.closed, host: host, reason: "write after the connection closed")) {
            try await loop.submit { try connection.value.write("late") }
        }
        let closes = client.log.snapshot.filter(\.isClose)
        #expect(closes.count == 1)
    }

    @Test(.enabled(if: loopbackIPv6Available(), "no IPv6 loopback on this machine"))
    func ipv6LoopbackLiteralConnects() async throws {
        let loop = EventLoop(label: "test.ipv6")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, host: "::1", recorder: Recorder(echo: true))
        defer { server.stop() }
        let client = Recorder()
        let connection = try await connectClient(loop, host: "::1", port: server.port, configuration: fixtures.client(), recorder: client)
        #expect(try await client.log.readyOrFailure() == nil)
        #expect(try await loop.submit { connection.value.remoteDescription } == "[::1]:\(server.port)")
        try await loop.submit { try connection.value.write("ping") }
        #expect(try await client.log.received(atLeast: 4) == Array("ping".utf8))
        let started = ContinuousClock.now
        try await loop.submit { connection.value.close() }
        #expect(try await client.log.closeError() == nil)
        #expect(try await server.recorder.log.closeError() == nil)
        // Both ends saw each other's close_notify and EOF: well within the 2 s grace, not by giving up.
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func peerDataThenCloseIsDeliveredBeforeTheClose() async throws {
        let loop = EventLoop(label: "test.flush")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder())
        defer { server.stop() }
        let client = Recorder()
        _ = try await connectClient(loop, host: "localhost", port: server.port, configuration: fixtures.client(), recorder: client)
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }
        let goodbye = [UInt8](repeating: 0x42, count: 150_000)
        try await loop.submit {
            let accepted = server.accepted[0]
            try goodbye.withUnsafeBytes { try accepted.write($0) }
            accepted.close()
        }
        #expect(try await client.log.closeError() == nil)
        let events = client.log.snapshot
        #expect(EventLog.bytes(in: events) == goodbye)
        #expect(events.last == .closed(nil))
    }

    @Test func peerAbortWithoutCloseNotifyIsAConnectionReset() async throws {
        let loop = EventLoop(label: "test.abort")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder())
        defer { server.stop() }
        let client = Recorder()
        _ = try await connectClient(loop, host: "localhost", port: server.port, configuration: fixtures.client(), recorder: client)
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }
        #expect(try await client.log.readyOrFailure() == nil)
        try await loop.submit { server.accepted[0].abort() }
        #expect(try await server.recorder.log.closeError() == nil)  // abort reports nil to its own side
        let error = try await client.log.closeError()
        #expect(error?.kind == .connectionReset)
        #expect(error?.reason.contains("close_notify") == true)
    }

    /// On both backends: a Dispatch queue's sources and the epoll thread each report the socket's error event.
    @Test(arguments: [EventLoop.Backend.dispatch, .epoll])
    func connectionRefusedIsConnectFailedNamingTheHost(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.refused", backend: backend)
        let fixtures = try Fixtures.make()
        let port: Int
        do {  // a port that was just free: bind, then close
            let listener = try SilentListener()
            port = listener.port
        }
        let client = Recorder()
        _ = try await connectClient(loop, host: "127.0.0.1", port: port, configuration: fixtures.client(), recorder: client)
        let error = try await client.log.closeError()
        #expect(error?.kind == .connectFailed)
        #expect(error?.host == "127.0.0.1")
        #expect(error?.reason.contains("Connection refused") == true)
        #expect(error?.description.hasPrefix("TCP connect failed for 127.0.0.1: ") == true)
        #expect(!client.log.snapshot.contains(.ready))
    }

    @Test func handshakeTimesOutAgainstAListenerThatNeverAnswers() async throws {
        let loop = EventLoop(label: "test.hs-timeout")
        let fixtures = try Fixtures.make()
        let silent = try SilentListener()
        let client = Recorder()
        let started = ContinuousClock.now
        _ = try await connectClient(loop, host: "127.0.0.1", port: silent.port,
                                    configuration: fixtures.client { $0.handshakeTimeout = 0.3 }, recorder: client)
        let error = try await client.log.closeError(timeout: 5)
        #expect(error?.kind == .handshakeTimedOut)
        #expect(error?.host == "127.0.0.1")
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        withExtendedLifetime(silent) {}
    }

    @Test func connectTimesOutWhenTheListenerDropsSYNs() async throws {
        let loop = EventLoop(label: "test.connect-timeout")
        let fixtures = try Fixtures.make()
        // A full accept queue: Linux drops further SYNs, so our connect stays pending.
        let listener = try SilentListener(backlog: 0)
        let fillers = (0..<3).map { _ in startPlainConnect(port: listener.port) }
        defer { fillers.forEach { _ = close($0) } }
        let client = Recorder()
        _ = try await connectClient(loop, host: "127.0.0.1", port: listener.port,
                                    configuration: fixtures.client { $0.connectTimeout = 0.3 }, recorder: client)
        let error = try await client.log.closeError(timeout: 5)
        #expect(error?.kind == .connectTimedOut)
        #expect(error?.description == "TCP connect timed out for 127.0.0.1: no TCP connection within 0.3 s")
        withExtendedLifetime(listener) {}
    }

    @Test func missingCAFileFailsTheConnectWithConfiguration() async throws {
        let loop = EventLoop(label: "test.cafile")
        let client = Recorder()
        _ = try await connectClient(loop, host: "localhost", port: 1,
                                    configuration: TLSClientConfiguration(caFile: "/nonexistent/ccsd-ca.pem"), recorder: client)
        let error = try await client.log.closeError()
        #expect(error?.kind == .configuration)
        #expect(error?.host == "localhost")
    }

    @Test func closeBeforeConnectingReportsNilOnceOnALaterTurn() async throws {
        let loop = EventLoop(label: "test.early-close")
        let fixtures = try Fixtures.make()
        let client = Recorder()
        let sawCloseInsideClose = try await loop.submit {
            let connection = TLSConnection.connect(host: "localhost", port: 1, configuration: fixtures.client(), on: loop, delegate: client)
            connection.close()
            connection.close()
            return client.log.snapshot.contains(where: \.isClose)
        }
        #expect(!sawCloseInsideClose)
        #expect(try await client.log.closeError() == nil)
        // Give any stray second callback (resolution, timer) a bounded chance to show up.
        _ = try? await client.log.wait("a second close", timeout: 0.3) { $0.filter(\.isClose).count > 1 }
        #expect(client.log.snapshot.filter(\.isClose).count == 1)
    }
}

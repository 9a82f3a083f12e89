import Testing
import Glibc
@testable import TLS

/// TLS client and server on a loop with its own epoll thread (`EventLoop.Backend.epoll`), over loopback:
/// the same handshake, echo and close as on the Dispatch backend (TLSConnectionTests).
@Suite struct EpollLoopTLSTests {
    @Test func aConnectionOnAnEpollLoopHandshakesEchoesAndClosesCleanly() async throws {
        let loop = EventLoop(label: "test.epoll-echo", backend: .epoll)
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder(echo: true))
        defer { server.stop() }
        let client = Recorder()
        let connection = try await connectClient(loop, host: "localhost", port: server.port, configuration: fixtures.client(), recorder: client)
        // Written before the handshake completes: queued, then sent first; larger than one read.
        let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try await loop.submit { try payload.withUnsafeBytes { try connection.value.write($0) } }
        #expect(try await client.log.readyOrFailure() == nil)
        #expect(try await loop.submit { connection.value.negotiatedProtocol } == "TLSv1.3")
        #expect(try await client.log.received(atLeast: payload.count) == payload)

        let closing = ContinuousClock.now
        try await loop.submit { connection.value.close() }
        #expect(try await client.log.closeError() == nil)
        #expect(try await server.recorder.log.closeError() == nil)
        #expect(ContinuousClock.now - closing < .seconds(1))
        #expect(client.log.snapshot.filter(\.isClose).count == 1)
    }

    /// A handshake that never completes ends by the loop's timer.
    @Test func handshakeTimesOutOnAnEpollLoop() async throws {
        let loop = EventLoop(label: "test.epoll-hs-timeout", backend: .epoll)
        let fixtures = try Fixtures.make()
        let silent = try SilentListener()
        let client = Recorder()
        _ = try await connectClient(loop, host: "127.0.0.1", port: silent.port,
                                    configuration: fixtures.client { $0.handshakeTimeout = 0.3 }, recorder: client)
        let error = try await client.log.closeError(timeout: 5)
        #expect(error?.kind == .handshakeTimedOut)
        withExtendedLifetime(silent) {}
    }
}

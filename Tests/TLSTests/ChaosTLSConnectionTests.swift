import Foundation
import Testing
@testable import TLS

/// TLSConnection lifetime: a regression test from the chaos pass (it failed before the fix).
@Suite struct ChaosTLSConnectionTests {
    /// `beginClosing()` flushes pending plaintext first; when that send fails (the peer reset the connection),
    /// `finish()` closes the connection and notifies the delegate, and then `beginClosing()` carries on:
    /// `state = .closing` resurrects the closed connection and arms a 2 s close-grace timer, which calls
    /// `finish(nil)` again and notifies the delegate a second time. Expected: `didCloseWith` exactly once
    /// (the documented contract), no timer after close.
    @Test func closeWhoseFlushFailsReportsTheCloseOnce() async throws {
        let loop = EventLoop(label: "test.chaos.close")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder())
        defer { server.stop() }
        // Reading paused once ready, so the client does not notice the peer's FIN/RST by itself.
        let client = Recorder(pauseReadingWhenReady: true)
        let connection = try await connectClient(loop, host: "localhost", port: server.port, configuration: fixtures.client(), recorder: client)
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }
        #expect(try await client.log.readyOrFailure() == nil)
        try await loop.submit { server.accepted[0].abort() }          // peer gone: FIN now, RST on our next bytes
        try await Task.sleep(for: .milliseconds(200))
        try await loop.submit { try connection.value.write("first bytes: the peer answers them with RST") }
        try await Task.sleep(for: .milliseconds(200))
        try await loop.submit {
            try connection.value.write("queued, flushed by close()")  // pending plaintext for beginClosing
            connection.value.close()                                   // flush fails -> finish(), then state = .closing
        }
        try await Task.sleep(for: .milliseconds(TLSConnection.closeGraceSeconds > 0 ? 3000 : 0))
        let closes = client.log.snapshot.filter { if case .closed = $0 { true } else { false } }
        #expect(closes.count == 1, "didCloseWith reported \(closes.count) times: \(closes.map(\.brief))")
    }
}

import Testing
import TLS

@Suite struct BackpressureTests {
    /// On both loop backends (Dispatch sources; the epoll thread's level-triggered writable events).
    @Test(arguments: [EventLoop.Backend.dispatch, .epoll])
    func writingPastTheBoundThrowsAndDrainFollowsWhenThePeerReads(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.backpressure", backend: backend)
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder(pauseReadingWhenReady: true))
        defer { server.stop() }
        let client = Recorder()
        let bound = 256 * 1024
        let connection = try await connectClient(loop, host: "localhost", port: server.port,
                                                 configuration: fixtures.client { $0.maxBufferedWriteBytes = bound }, recorder: client)
        #expect(try await client.log.readyOrFailure() == nil)
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }

        // Write 16 KiB chunks until refused; kernel buffers take a few MiB first. Bounded at 256 MiB.
        let chunk = [UInt8](repeating: 0x61, count: 16 * 1024)
        let (accepted, refusal, buffered) = try await loop.submit { () -> (Int, TLSError?, Int) in
            var written = 0
            while written < 256 << 20 {
                do {
                    try chunk.withUnsafeBytes { try connection.value.write($0) }
                    written += chunk.count
                } catch {
                    return (written, error as? TLSError, connection.value.bufferedBytes)
                }
            }
            return (written, nil, connection.value.bufferedBytes)
        }
        #expect(refusal?.kind == .writeBufferFull)
        #expect(buffered > bound - chunk.count - 4096)
        #expect(buffered <= bound + 4096)  // plaintext bound plus record overhead
        #expect(!client.log.snapshot.contains(.drained))

        // The peer starts reading: everything arrives and the writer hears the drain.
        try await loop.submit { server.accepted[0].isReadingPaused = false }
        try await client.log.wait("drained", timeout: 20) { $0.contains(.drained) }
        let received = try await server.recorder.log.received(atLeast: accepted, timeout: 20)
        #expect(received.count == accepted)
        #expect(try await loop.submit { connection.value.bufferedBytes } == 0)
        // Writable again.
        try await loop.submit { try connection.value.write("more") }
        #expect(try await server.recorder.log.received(atLeast: accepted + 4).count == accepted + 4)
    }
}

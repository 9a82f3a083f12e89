import Dispatch
import Glibc
import Testing
import TLS

/// What a handler may rely on from the epoll loop's level-triggered watch.
@Suite struct LevelTriggeredWatchTests {
    /// A pipe whose read end is nonblocking: (read end, write end).
    static func makePipe() -> (reader: Int32, writer: Int32) {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        return (ends[0], ends[1])
    }

    /// A handler that reads once per call and never reads on still gets every byte and the end of the pipe,
    /// also when the last bytes and the end come together: the watch is level-triggered. `LoopIntake` ends a
    /// turn after a short read on this loop (`ReadWatch.isLevelTriggered`).
    @Test func aHandlerThatReadsOncePerCallSeesEveryByteAndTheEnd() async throws {
        let loop = EventLoop(label: "test.level", backend: .epoll)
        let (reader, writer) = Self.makePipe()
        let received = Locked<[UInt8]>([])
        let ended = Locked(false)
        let calls = Locked(0)
        let watch = try await loop.submit { () -> UncheckedBox<ReadWatch> in
            let own = Holder()
            let watch = loop.watchReadable(reader) {
                calls.withLock { $0 += 1 }
                var bytes = [UInt8](repeating: 0, count: 3)
                let count = read(reader, &bytes, 3)
                if count > 0 { received.withLock { $0 += bytes[..<count] } }
                if count == 0 {
                    ended.withLock { $0 = true }
                    own.watch?.cancel(closing: true)  // as LoopIntake does at the end: the end stays readable
                }
            }
            own.watch = watch
            return UncheckedBox(watch)
        }
        #expect(try await loop.submit { watch.value.isLevelTriggered })
        // Ten bytes and the end in one go, while the loop is held: one readiness event for all of it.
        try await loop.submit {
            _ = write(writer, "0123456789", 10)
            close(writer)
        }
        for _ in 0..<500 where !ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received.withLock { $0 } == Array("0123456789".utf8))
        #expect(ended.withLock { $0 })
        #expect(calls.withLock { $0 } == 5)  // 3 + 3 + 3 + 1 bytes, then the end
    }

    /// The watch a handler cancels itself (on the loop only).
    final class Holder { var watch: ReadWatch? }

    @Test func aDispatchWatchIsNotLevelTriggered() async throws {
        let loop = EventLoop(label: "test.dispatch-watch", backend: .dispatch)
        let (reader, writer) = Self.makePipe()
        defer { close(writer) }
        let level = try await loop.submit { () -> Bool in
            let watch = loop.watchReadable(reader) {}
            defer { watch.cancel(closing: true) }
            return watch.isLevelTriggered
        }
        #expect(!level)
    }
}

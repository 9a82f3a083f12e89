import Dispatch
import Glibc
import Testing
import TLS

/// Both backends (a Dispatch queue, the loop's own epoll thread) behave alike: every test runs on each.
@Suite struct EventLoopTests {
    static let backends: [EventLoop.Backend] = [.dispatch, .epoll]

    @Test(arguments: backends)
    func executeRunsOnTheLoopAndInEventLoopTellsWhere(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.execute", backend: backend)
        #expect(!loop.inEventLoop)
        let inside = try await loop.submit { loop.inEventLoop }
        #expect(inside)
        let other = EventLoop(label: "test.other")
        #expect(try await other.submit { loop.inEventLoop } == false)
    }

    @Test(arguments: backends)
    func submitAndWaitReturnsAndRethrows(backend: EventLoop.Backend) {
        let loop = EventLoop(label: "test.sync", backend: backend)
        #expect(loop.submitAndWait { loop.inEventLoop })
        struct Boom: Error {}
        #expect(throws: Boom.self) { try loop.submitAndWait { throw Boom() } }
    }

    @Test(arguments: backends)
    func submitPropagatesErrors(backend: EventLoop.Backend) async {
        let loop = EventLoop(label: "test.async", backend: backend)
        struct Boom: Error {}
        await #expect(throws: Boom.self) { try await loop.submit { throw Boom() } }
    }

    @Test(arguments: backends)
    func scheduledWorkRunsInOrderAndCancelledWorkDoesNot(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.timers", backend: backend)
        let log = EventLog()
        try await loop.submit {
            let start = DispatchTime.now()
            loop.schedule(after: 0.05) {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                log.append(.data([elapsed >= 0.045 ? 1 : 0]))
            }
            let cancelled = loop.schedule(after: 0.01) { log.append(.drained) }
            cancelled.cancel()
            #expect(!cancelled.isPending)
            loop.schedule(after: 0.1) { log.append(.ready) }
        }
        let events = try await log.wait("both timers") { $0.contains(.ready) }
        #expect(events == [.data([1]), .ready])
    }

    /// Work from another thread runs in the order given; work due at once (`schedule(after: 0)`) runs on a
    /// later turn, never inside the call; timers due together run in the order scheduled.
    @Test(arguments: backends)
    func orderOfExecuteImmediateWorkAndTimers(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.order", backend: backend)
        let order = Locked<[Int]>([])
        for index in 0..<200 { loop.execute { order.withLock { $0.append(index) } } }
        try await loop.submit {
            var ranInside = false
            loop.schedule(after: 0) { ranInside = true; order.withLock { $0.append(1000) } }
            #expect(!ranInside)
            for index in 0..<5 { loop.schedule(after: 0.02) { order.withLock { $0.append(2000 + index) } } }
        }
        for _ in 0..<500 where order.withLock({ $0.count }) < 206 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(order.withLock { $0 } == Array(0..<200) + [1000] + Array(2000..<2005))
    }

    /// `watchReadable` calls its handler while a pipe has bytes, not while disabled, and closes the
    /// descriptor on `cancel(closing: true)`.
    @Test(arguments: backends)
    func watchReadableFollowsThePipeAndItsSwitch(backend: EventLoop.Backend) async throws {
        let loop = EventLoop(label: "test.watch", backend: backend)
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        defer { close(ends[1]) }
        let received = Locked<[UInt8]>([])
        let reader = ends[0]
        let watch = try await loop.submit { () -> UncheckedBox<ReadWatch> in
            UncheckedBox(loop.watchReadable(reader) {
                var byte: UInt8 = 0
                if read(reader, &byte, 1) == 1 { received.withLock { $0.append(byte) } }
            })
        }
        _ = write(ends[1], "ab", 2)
        for _ in 0..<500 where received.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received.withLock { $0 } == Array("ab".utf8))
        try await loop.submit { watch.value.setEnabled(false) }
        _ = write(ends[1], "c", 1)
        try await Task.sleep(for: .milliseconds(100))
        #expect(received.withLock { $0.count } == 2)
        try await loop.submit { watch.value.setEnabled(true) }
        for _ in 0..<500 where received.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received.withLock { $0 } == Array("abc".utf8))
        try await loop.submit { watch.value.cancel(closing: true) }
        // The read end closed: the write end reports an error (its number may already be reused elsewhere).
        func readerClosed() -> Bool {
            var polled = pollfd(fd: ends[1], events: Int16(POLLOUT), revents: 0)
            return poll(&polled, 1, 0) == 1 && polled.revents & Int16(POLLERR) != 0
        }
        for _ in 0..<500 where !readerClosed() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(readerClosed())
    }
}

/// A value handed between the test and its loop (used only on the loop).
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A value behind a lock, for tests.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = DispatchSemaphore(value: 1)
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.wait()
        defer { lock.signal() }
        return body(&value)
    }
}

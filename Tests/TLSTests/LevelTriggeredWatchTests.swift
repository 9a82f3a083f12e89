import Dispatch
import Glibc
import Testing
@testable import TLS

/// The epoll loop's turn: queued work, timers and readiness events, in which order, and what a handler may
/// rely on from its level-triggered watch.
@Suite struct EpollTurnTests {
    /// A pipe whose read end is nonblocking: (read end, write end).
    static func makePipe() -> (reader: Int32, writer: Int32) {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        return (ends[0], ends[1])
    }

    /// Work queued by work runs in the same turn, before the next poll, for up to `EpollReactor.workRounds`
    /// rounds (the work that queued the chain is the first); then a poll lets a readiness event in before the
    /// rest of the chain. On the old loop (a zero-timeout poll after every round) the event came first.
    @Test func workQueuedByWorkRunsBeforeTheNextPollUpToTheRoundLimit() async throws {
        let loop = EventLoop(label: "test.rounds", backend: .epoll)
        let (reader, writer) = Self.makePipe()
        defer { close(writer) }
        let order = Locked<[String]>([])
        let watch = try await loop.submit { () -> UncheckedBox<ReadWatch> in
            UncheckedBox(loop.watchReadable(reader) {
                var byte: UInt8 = 0
                if read(reader, &byte, 1) == 1 { order.withLock { $0.append("readable") } }
            })
        }
        let chainLength = EpollReactor.workRounds + 4
        @Sendable func link(_ index: Int) {
            order.withLock { $0.append("work \(index)") }
            if index + 1 < chainLength { loop.execute { link(index + 1) } }
        }
        try await loop.submit {
            _ = write(writer, "x", 1)  // readable from now on
            loop.execute { link(0) }
        }
        for _ in 0..<500 where order.withLock({ $0.count }) < chainLength + 1 { try await Task.sleep(for: .milliseconds(10)) }
        let links = (0..<chainLength).map { "work \($0)" }
        // Rounds: the submitted work, then links 0 ..< workRounds - 1; the poll; the rest.
        let beforePoll = EpollReactor.workRounds - 1
        #expect(order.withLock { $0 } == Array(links[..<beforePoll]) + ["readable"] + Array(links[beforePoll...]))
        try await loop.submit { watch.value.cancel(closing: true) }
    }

    /// Work a timer queues runs only after a poll: readiness that came before the timer fired is handled
    /// first (the daemon's wake-up relies on it: reads queued behind a busy loop are taken before timeouts
    /// are judged).
    @Test func workQueuedByATimerRunsAfterAPoll() async throws {
        let loop = EventLoop(label: "test.timer-poll", backend: .epoll)
        let (reader, writer) = Self.makePipe()
        defer { close(writer) }
        let order = Locked<[String]>([])
        let watch = try await loop.submit { () -> UncheckedBox<ReadWatch> in
            UncheckedBox(loop.watchReadable(reader) {
                var byte: UInt8 = 0
                if read(reader, &byte, 1) == 1 { order.withLock { $0.append("readable") } }
            })
        }
        try await loop.submit {
            _ = loop.schedule(after: 0.02) {
                _ = write(writer, "x", 1)
                order.withLock { $0.append("timer") }
                _ = loop.schedule(after: 0) { order.withLock { $0.append("queued by the timer") } }
            }
        }
        for _ in 0..<500 where order.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(order.withLock { $0 } == ["timer", "readable", "queued by the timer"])
        try await loop.submit { watch.value.cancel(closing: true) }
    }

    /// A handler that reads once per call and never reads on still gets every byte and the end of the pipe,
    /// also when the last bytes and the end come together: the watch is level-triggered. `LoopIntake` and
    /// `TLSConnection` end a turn after a short read on this loop (`ReadWatch.isLevelTriggered`).
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

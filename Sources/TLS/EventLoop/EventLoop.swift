import Dispatch

/// One event loop for all network I/O: every socket's readiness handlers, timers and delegate callbacks run
/// on it, one at a time. No thread per connection.
///
/// Two backends (`Backend`): a serial `DispatchQueue` with Dispatch sources (the default), or a thread of
/// the loop's own waiting in `epoll_wait` (`EpollReactor`), which wakes one thread per readiness event
/// instead of three.
///
/// Objects that belong to a loop (`TLSConnection`, `TLSServer`, `TimerHandle`) are confined to it:
/// call them only from work running on the loop (`execute`, `submit`, `submitAndWait`, delegate callbacks).
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: the queue is thread-safe; the scratch buffers are touched only on the queue.
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<UInt>()
    private let token: UInt
    /// The loop's own thread, for `Backend.epoll`; nil: the Dispatch queue.
    let reactor: EpollReactor?

    /// How a loop waits for readiness and runs its work.
    public enum Backend: Sendable {
        /// A serial Dispatch queue; sockets and timers are Dispatch sources on it (`dispatchQueue` works).
        case dispatch
        /// A thread of the loop's own in `epoll_wait` (`EpollReactor`); `dispatchQueue` must not be used.
        case epoll
    }

    /// Scratch space for one socket read (ciphertext), shared by all connections on this loop: 64 KiB.
    let readScratch: UnsafeMutableRawBufferPointer
    /// Scratch space for decrypted bytes handed to a delegate: 64 KiB.
    let plaintextScratch: UnsafeMutableRawBufferPointer
    /// Bytes read from a socket per readiness event, at most (fairness between connections).
    static let readChunkSize = 64 * 1024

    /// Creates a loop named `label`: on a new serial queue, or on a thread of its own (`backend: .epoll`).
    public init(label: String = "ccsd.loop", backend: Backend = .dispatch) {
        queue = DispatchQueue(label: label)
        reactor = backend == .epoll ? EpollReactor(label: label) : nil
        readScratch = .allocate(byteCount: Self.readChunkSize, alignment: 16)
        plaintextScratch = .allocate(byteCount: Self.readChunkSize, alignment: 16)
        token = UInt(bitPattern: ObjectIdentifier(queue).hashValue)
        queue.setSpecific(key: key, value: token)
    }

    deinit {
        readScratch.deallocate()
        plaintextScratch.deallocate()
    }

    /// Runs `work` on the loop, later, from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if let reactor { return reactor.execute(work) }
        queue.async(execute: work)
    }

    /// Whether the caller is running on this loop.
    public var inEventLoop: Bool {
        if let reactor { return reactor.isCurrent }
        return DispatchQueue.getSpecific(key: key) == token
    }

    /// Traps unless the caller runs on this loop.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "not on event loop \(queue.label)", file: file, line: line)
    }

    /// Runs `work` on the loop after `seconds` (monotonic clock). Call from the loop.
    /// - Returns: a handle whose `cancel()` (on the loop) stops `work` from running.
    @discardableResult
    public func schedule(after seconds: Double, _ work: @escaping () -> Void) -> TimerHandle {
        preconditionInEventLoop()
        let handle = TimerHandle(work: work)
        let bound = UncheckedSendable(handle)
        let nanoseconds = Int(max(0, seconds) * 1_000_000_000)
        if let reactor {
            // Due at once: a later turn, without a timer.
            if nanoseconds == 0 {
                reactor.execute { bound.value.fire() }
            } else {
                reactor.schedule(at: EpollReactor.monotonicNanoseconds() + UInt64(nanoseconds)) { bound.value.fire() }
            }
            return handle
        }
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
            bound.value.fire()
        }
        return handle
    }

    /// Runs `work` on the loop and waits for its result: for setup code and tests.
    /// Never call it from the loop itself (it would deadlock; it traps instead).
    public func submitAndWait<T>(_ work: () throws -> T) rethrows -> T {
        precondition(!inEventLoop, "submitAndWait called on its own event loop \(queue.label)")
        guard let reactor else { return try queue.sync(execute: work) }
        return try reactor.lend(work)
    }

    /// Async bridge: runs `work` on the loop and resumes the caller with its result or error.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            execute {
                do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
            }
        }
    }
}

/// A pending `EventLoop.schedule(after:_:)`; confined to its loop.
public final class TimerHandle {
    private var work: (() -> Void)?

    init(work: @escaping () -> Void) { self.work = work }

    /// Stops the work from running if it has not run yet; releases it at once. Idempotent.
    public func cancel() { work = nil }

    /// Whether the work neither ran nor was cancelled yet.
    public var isPending: Bool { work != nil }

    fileprivate func fire() {
        guard let work else { return }
        self.work = nil
        work()
    }
}

/// Carries a loop-confined value into a `@Sendable` closure that runs on that loop.
/// Reading `value` off the loop traps, so a mistake shows at once instead of as a data race.
public struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    /// The loop `value` belongs to.
    public let eventLoop: EventLoop

    /// Wraps `value`, which must only be used on `eventLoop`.
    public init(_ value: Value, eventLoop: EventLoop) {
        self.wrapped = value
        self.eventLoop = eventLoop
    }

    /// The wrapped value; only on `eventLoop`.
    public var value: Value {
        eventLoop.preconditionInEventLoop()
        return wrapped
    }
}

/// Internal hop of a loop-confined value through a `@Sendable` closure whose code runs on the same loop.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

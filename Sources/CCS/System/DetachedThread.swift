import Glibc

/// Threads of ccsd's own (the intake reader, the webhook worker, short helpers), on pthreads: what
/// Foundation's `Thread` did for ccsd, without linking Foundation.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (what `top -H` and `/proc/PID/task/*/comm` show;
    /// Linux keeps at most 15 bytes of it). Stops the process when the system cannot start a thread.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, entry, box)
        precondition(status == 0, "cannot start thread \(name): \(String(cString: strerror(status)))")
        pthread_detach(thread)
    }

    /// The new thread's first function: names it, runs the body, releases what `start` retained.
    private static let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        nameCurrentThread(start.name)
        start.body()
        return nil
    }

    /// Names the calling thread through `/proc/thread-self/comm` (`pthread_setname_np` is not in Swift's Glibc
    /// module); nothing happens when /proc is not there.
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Blocks the calling thread for `seconds` (fractions included; interrupted sleeps go on).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }

    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}

/// A condition variable with its mutex (pthreads), with the shape of Foundation's `NSCondition`: `lock`,
/// `unlock`, `wait`, `wait(until:)`, `signal`, `broadcast`. For state shared with a worker thread that sleeps
/// until told or until a deadline.
public final class ThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)  // deadlines do not move with the wall clock
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits (the lock held) until signalled; may wake spuriously, so callers wait in a loop on their state.
    public func wait() { pthread_cond_wait(condition, mutex) }
    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits (the lock held) until signalled or `deadline` (`ContinuousClock`) passes; false when it passed.
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = left.components
        var nanoseconds = now.tv_nsec + Int(attoseconds / 1_000_000_000)
        var wholeSeconds = now.tv_sec + Int(seconds)
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            wholeSeconds += 1
        }
        var until = timespec(tv_sec: wholeSeconds, tv_nsec: nanoseconds)
        return pthread_cond_timedwait(condition, mutex, &until) != ETIMEDOUT
    }
}

import CEpoll
import Dispatch
import Glibc
import Synchronization
import TimerHeap

/// The event loop's own thread, for `EventLoop.Backend.epoll`: one thread that waits in `epoll_wait` and
/// runs every handler, timer and piece of work itself.
///
/// Why: with Dispatch on Linux every readiness event of a socket or pipe wakes two threads (Dispatch's
/// manager thread in `epoll_wait`, then a worker thread for the loop's queue) and, once the handler ran,
/// the manager a third time through its eventfd to arm the source again. Here an event wakes the one
/// thread that handles it. Work from other threads (`execute`) is queued under a lock and wakes the
/// thread through an eventfd only when it sleeps.
///
/// Registrations are level-triggered: a handler that leaves bytes unread is called again on the next turn.
/// The thread runs for the life of the process (it keeps its reactor, and so its loop's work, alive): an epoll
/// loop is for a process's one long-lived loop (`ccsd run`, the emulator), not for loops made and dropped.
/// Confined to its thread, except `execute`, `isCurrent` and `lend`.
final class EpollReactor: @unchecked Sendable {
    // @unchecked Sendable: `shared` is behind `lock`; `thread` is written once before `init` returns;
    // everything else is touched only on the reactor's thread.
    private let epoll: Int32
    private let wake: Int32
    private struct Shared {
        var incoming: [() -> Void] = []
        /// The thread is in (or about to enter) `epoll_wait` with a timeout: `execute` must wake it.
        var sleeping = false
    }
    private var shared = Shared()
    private let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
        return lock
    }()

    /// Runs `body` on `shared` under the lock.
    private func withShared<T>(_ body: (inout Shared) -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body(&shared)
    }
    private var thread = pthread_t()
    private var watches: [UInt64: Watch] = [:]
    private var nextToken: UInt64 = 1
    /// Timers by `CLOCK_MONOTONIC` deadline, in nanoseconds.
    private var timers = TimerHeap<UInt64, () -> Void>()
    private static let wakeToken: UInt64 = 0
    /// epoll_ctl's operations (EPOLL_CTL_ADD, _DEL, _MOD).
    fileprivate static let add: Int32 = 1, delete: Int32 = 2, modify: Int32 = 3

    /// Starts the thread, named `label` (its first 15 bytes).
    init(label: String) {
        epoll = ccsd_epoll_create()
        wake = ccsd_eventfd()
        precondition(epoll >= 0 && wake >= 0, "epoll_create1/eventfd failed: errno \(errno)")
        precondition(ccsd_epoll_ctl(epoll, Self.add, wake, ccsd_epoll_in, Self.wakeToken) == 0, "epoll_ctl failed: errno \(errno)")
        let started = DispatchSemaphore(value: 0)
        let start = ThreadStart { [self] in
            thread = pthread_self()
            ccsd_name_thread(label)
            started.signal()
            run()
        }
        var id = pthread_t()
        let result = pthread_create(&id, nil, { argument in
            Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, Unmanaged.passRetained(start).toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(id)
        started.wait()
    }

    /// A thread the loop is lent to (`lend`), or 0.
    private let borrower = Atomic<UInt>(0)

    /// Whether the caller runs on the reactor's thread (or borrows it: `lend`).
    var isCurrent: Bool {
        pthread_equal(pthread_self(), thread) != 0 || borrower.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Runs `work` on the caller's thread while the reactor's thread waits: nothing else runs on the loop
    /// meanwhile, and `work` counts as on the loop (for `EventLoop.submitAndWait`, setup code and tests).
    /// Never call it on the reactor's thread.
    func lend<T>(_ work: () throws -> T) rethrows -> T {
        let parked = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        execute {
            parked.signal()
            released.wait()
        }
        parked.wait()
        borrower.store(UInt(pthread_self()), ordering: .releasing)
        defer {
            borrower.store(0, ordering: .releasing)
            released.signal()
        }
        return try work()
    }

    /// Runs `work` on the thread, later, from any thread (in the order given).
    func execute(_ work: @escaping () -> Void) {
        let mustWake = withShared { shared in
            shared.incoming.append(work)
            defer { shared.sleeping = false }
            return shared.sleeping
        }
        if mustWake { ccsd_eventfd_signal(wake) }
    }

    /// Runs `work` at `deadline` (nanoseconds of `CLOCK_MONOTONIC`) or later, after the timers due before it
    /// and those due at the same time that were added before. On the thread.
    func schedule(at deadline: UInt64, _ fire: @escaping () -> Void) {
        timers.schedule(at: deadline, fire)
    }

    /// Watches `fd` (nonblocking) for reading and writing, both off at first. On the thread.
    func watch(_ fd: Int32) -> Watch {
        let watch = Watch(reactor: self, fd: fd, token: nextToken)
        nextToken += 1
        watches[watch.token] = watch
        return watch
    }

    /// Interest in one descriptor: handlers for readable and writable, each on or off. Confined to the thread.
    final class Watch {
        private unowned let reactor: EpollReactor
        let fd: Int32
        let token: UInt64
        var onReadable: () -> Void = {}
        var onWritable: () -> Void = {}
        private(set) var reading = false
        private(set) var writing = false
        private var registered = false
        private(set) var isRemoved = false

        fileprivate init(reactor: EpollReactor, fd: Int32, token: UInt64) {
            self.reactor = reactor
            self.fd = fd
            self.token = token
        }

        func setReading(_ on: Bool) {
            guard !isRemoved, on != reading else { return }
            reading = on
            update()
        }

        func setWriting(_ on: Bool) {
            guard !isRemoved, on != writing else { return }
            writing = on
            update()
        }

        /// Stops watching; the caller closes the descriptor afterwards. Idempotent.
        func remove() {
            guard !isRemoved else { return }
            isRemoved = true
            if registered { _ = ccsd_epoll_ctl(reactor.epoll, EpollReactor.delete, fd, 0, 0) }
            registered = false
            reactor.watches[token] = nil
            onReadable = {}
            onWritable = {}
        }

        /// Registered only while some interest is on: with none, epoll would still report hang-ups and errors.
        private func update() {
            var mask: UInt32 = 0
            if reading { mask |= ccsd_epoll_in | ccsd_epoll_rdhup }
            if writing { mask |= ccsd_epoll_out }
            if mask == 0 {
                if registered { _ = ccsd_epoll_ctl(reactor.epoll, EpollReactor.delete, fd, 0, 0) }
                registered = false
            } else {
                let result = ccsd_epoll_ctl(reactor.epoll, registered ? EpollReactor.modify : EpollReactor.add, fd, mask, token)
                precondition(result == 0, "epoll_ctl on fd \(fd) failed: errno \(errno)")
                registered = true
            }
        }

        fileprivate func handle(_ events: UInt32) {
            let failed = events & (ccsd_epoll_err | ccsd_epoll_hup) != 0
            if reading, failed || events & (ccsd_epoll_in | ccsd_epoll_rdhup) != 0 { onReadable() }
            if !isRemoved, writing, failed || events & ccsd_epoll_out != 0 { onWritable() }
        }
    }

    private func run() {
        let capacity = 64
        let events = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity)
        let tokens = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        while true {
            // Work from other threads and from earlier turns, in order.
            let work = withShared { shared -> [() -> Void] in
                let work = shared.incoming
                shared.incoming.removeAll(keepingCapacity: true)
                return work
            }
            for item in work { item() }
            // Each taken out before it runs: a timer may schedule another (no access to `timers` stays open
            // while one runs). One `now` for the turn: a timer scheduled meanwhile is due later.
            let now = Self.monotonicNanoseconds()
            while let fire = timers.popDue(now: now) { fire() }
            let idle = withShared { shared -> Bool in
                shared.sleeping = shared.incoming.isEmpty
                return shared.sleeping
            }
            // Work left (queued by this turn's work): poll with a zero timeout, then run it. Running up to 4
            // rounds of such work before polling was measured (1 connection, paced at 80,000 msgs/s): a chain
            // such as intake -> commit -> result -> send then costs one `epoll_wait` instead of three (about 290
            // -> 115 per 1,000 messages) and the accept-to-ack p50 fell about 15 %, but ccsd and the emulator
            // each spent 3-6 % more CPU per message (acks and sends went out in smaller batches), and a
            // 100-connection flood was slower in most alternated runs. Not taken.
            let timeout = idle ? Self.millisecondsUntil(timers.nextDue, now: Self.monotonicNanoseconds()) : 0
            let count = ccsd_epoll_wait(epoll, events, tokens, Int32(capacity), timeout)
            if idle { withShared { $0.sleeping = false } }
            guard count > 0 else { continue }
            for index in 0..<Int(count) {
                let token = tokens[index]
                if token == Self.wakeToken {
                    ccsd_eventfd_drain(wake)
                    continue
                }
                // A handler earlier in this batch may have removed the watch (its descriptor number may even
                // be in use again): look it up per event.
                let watch = watches[token]  // read first: the handler may add or remove watches
                watch?.handle(events[index])
            }
        }
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// How long `epoll_wait` may sleep until `deadline` (rounded up to a millisecond); -1 (no limit) if none.
    static func millisecondsUntil(_ deadline: UInt64?, now: UInt64) -> Int32 {
        guard let deadline else { return -1 }
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }
}

private final class ThreadStart {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

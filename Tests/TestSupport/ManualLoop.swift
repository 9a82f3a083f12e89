import Daemon

/// A loop that runs only when a test turns it, on the test's own thread (the role of swift-nio's
/// `EmbeddedEventLoop`): `enqueue`d work runs in `run()`, scheduled work runs when `advance(by:)` moves the
/// clock past its deadline, in deadline order (ties in the order they were scheduled), each with the clock
/// set to its deadline, and the work it enqueues runs before the next timer.
public final class ManualLoop: LoopScheduler, @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, on the test's own task.
    public let clock: ManualClock
    private var queue: [() -> Void] = []
    private var timers: [Timer] = []
    private var nextSequence = 0
    /// Work run so far (turns taken), for tests that check nothing ran.
    public private(set) var turns = 0
    /// The most work one `run()` does before it traps: a loop that keeps re-enqueueing itself is a bug.
    public var maxTurnsPerRun = 100_000

    public init(clock: ManualClock = ManualClock()) {
        self.clock = clock
    }

    public var now: ContinuousClock.Instant { clock.now }

    public func enqueue(_ work: @escaping () -> Void) {
        queue.append(work)
    }

    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping () -> Void) -> any ScheduledWork {
        let timer = Timer(deadline: deadline, sequence: nextSequence, work: work)
        nextSequence += 1
        timers.append(timer)
        return timer
    }

    /// Timers not yet run nor cancelled, soonest first.
    public var pendingDeadlines: [ContinuousClock.Instant] {
        timers.filter(\.isPending).sorted(by: Timer.runsBefore).map(\.deadline)
    }

    /// Runs enqueued work (and what it enqueues) until none is left, then timers already due.
    public func run() {
        var ran = 0
        while true {
            while !queue.isEmpty {
                let work = queue.removeFirst()
                work()
                turns += 1
                ran += 1
                precondition(ran <= maxTurnsPerRun, "ManualLoop.run: more than \(maxTurnsPerRun) turns; work keeps re-enqueueing itself")
            }
            guard let timer = nextDue(by: clock.now) else { return }
            fire(timer)
        }
    }

    /// Moves the clock forward by `duration`, running each timer due on the way at its own deadline.
    public func advance(by duration: Duration) {
        advance(to: clock.now + duration)
    }

    /// Moves the clock forward to `instant`, running each timer due on the way at its own deadline.
    public func advance(to instant: ContinuousClock.Instant) {
        run()
        while let timer = nextDue(by: instant) {
            clock.advance(to: timer.deadline)
            fire(timer)
            run()
        }
        clock.advance(to: instant)
        run()
    }

    private func nextDue(by instant: ContinuousClock.Instant) -> Timer? {
        timers.removeAll { !$0.isPending }
        return timers.filter { $0.deadline <= instant }.min(by: Timer.runsBefore)
    }

    private func fire(_ timer: Timer) {
        timers.removeAll { $0 === timer }
        turns += 1
        timer.fire()
    }

    final class Timer: ScheduledWork {
        let deadline: ContinuousClock.Instant
        let sequence: Int
        private var work: (() -> Void)?

        init(deadline: ContinuousClock.Instant, sequence: Int, work: @escaping () -> Void) {
            self.deadline = deadline
            self.sequence = sequence
            self.work = work
        }

        var isPending: Bool { work != nil }
        func cancel() { work = nil }

        func fire() {
            guard let work else { return }
            self.work = nil
            work()
        }

        static func runsBefore(_ a: Timer, _ b: Timer) -> Bool {
            (a.deadline, a.sequence) < (b.deadline, b.sequence)
        }
    }
}

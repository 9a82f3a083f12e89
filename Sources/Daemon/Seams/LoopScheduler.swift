import TLS

/// Time and deferred work on the daemon's loop: the seam between the drivers and `EventLoop`, so tests can
/// step time with a manual loop. Confined to the loop: call it only from work running there.
public protocol LoopScheduler: AnyObject {
    /// Monotonic now.
    var now: ContinuousClock.Instant { get }
    /// Runs `work` on a later loop turn, never inside this call.
    func enqueue(_ work: @escaping () -> Void)
    /// Runs `work` on the loop at `deadline` or later (at once, on a later turn, when it has passed).
    /// - Returns: a handle whose `cancel()` stops `work` from running if it has not run yet.
    @discardableResult func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping () -> Void) -> any ScheduledWork
}

/// A pending `LoopScheduler.schedule(at:_:)`.
public protocol ScheduledWork: AnyObject {
    /// Stops the work from running if it has not run yet. Idempotent.
    func cancel()
}

extension TimerHandle: ScheduledWork {}

extension EventLoop: LoopScheduler {
    public var now: ContinuousClock.Instant { .now }

    public func enqueue(_ work: @escaping () -> Void) {
        schedule(after: 0, work)
    }

    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping () -> Void) -> any ScheduledWork {
        let delay = deadline - ContinuousClock.now
        let (seconds, attoseconds) = delay.components
        return schedule(after: Double(seconds) + Double(attoseconds) / 1e18, work)
    }
}

/// Monotonic time that moves only when a test says so: `ContinuousClock.Instant`s from a fixed origin.
public final class ManualClock: @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, on the test's own task (like the loop it drives).
    /// The instant the clock started at.
    public let origin: ContinuousClock.Instant
    public private(set) var now: ContinuousClock.Instant

    public init(origin: ContinuousClock.Instant = .now) {
        self.origin = origin
        self.now = origin
    }

    /// Time since `origin`.
    public var elapsed: Duration { now - origin }

    /// Moves time forward by `duration` (never backwards).
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a monotonic clock never goes back (advance by \(duration))")
        now += duration
    }

    /// Moves time forward to `instant`; no-op when it is not later.
    public func advance(to instant: ContinuousClock.Instant) {
        if instant > now { now = instant }
    }
}

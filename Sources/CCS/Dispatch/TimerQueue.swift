import TimerHeap

/// The dispatcher's timers: a min-heap keyed by due time (seconds on the dispatcher's clock), ties in the
/// order scheduled.
typealias TimerQueue<Payload: Sendable> = TimerHeap<Double, Payload>

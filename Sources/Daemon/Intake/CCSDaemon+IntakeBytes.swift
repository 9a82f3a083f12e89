import CCS

/// The intake byte bound's decisions (`max_queued_bytes`, IntakeByteBound.swift) on the daemon's state.
extension CCSDaemon {
    /// After a batch was submitted: whether the live set weighs at least `max_queued_bytes`.
    func intakeMustPauseForBytes(_ gauges: Dispatcher.Gauges) -> Bool {
        let (outstanding, jsonBytes) = (gauges.outstanding, gauges.liveJSONBytes)
        return intakeBytes.mustPause(limit: maxQueuedBytes, outstanding: outstanding, jsonBytes: { jsonBytes })
    }

    /// Whether a paused intake may resume as far as bytes go (below half of `max_queued_bytes`).
    func intakeMayResumeForBytes(_ gauges: Dispatcher.Gauges) -> Bool {
        let (outstanding, jsonBytes) = (gauges.outstanding, gauges.liveJSONBytes)
        return intakeBytes.mayResume(limit: maxQueuedBytes, outstanding: outstanding, jsonBytes: { jsonBytes })
    }
}

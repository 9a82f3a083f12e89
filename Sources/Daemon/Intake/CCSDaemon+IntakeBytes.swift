import CCS

/// The intake byte bound's decisions (`max_queued_bytes`, IntakeByteBound.swift) on the daemon's state.
extension CCSDaemon {
    /// After a batch was submitted: whether the live set weighs at least `max_queued_bytes`.
    func intakeMustPauseForBytes() -> Bool {
        let dispatcher = dispatcher
        return intakeBytes.mustPause(limit: configuration.effectiveMaxQueuedBytes, outstanding: dispatcher.outstanding, jsonBytes: {
            dispatcher.liveJSONBytes
        })
    }

    /// Whether a paused intake may resume as far as bytes go (below half of `max_queued_bytes`).
    func intakeMayResumeForBytes() -> Bool {
        let dispatcher = dispatcher
        return intakeBytes.mayResume(limit: configuration.effectiveMaxQueuedBytes, outstanding: dispatcher.outstanding, jsonBytes: {
            dispatcher.liveJSONBytes
        })
    }
}

import CCS

/// The intake byte bound's decisions (`max_queued_bytes`, IntakeByteBound.swift) on the daemon's state.
extension CCSDaemon {
    /// After a batch was submitted: whether the live set weighs at least `max_queued_bytes`.
    func intakeMustPauseForBytes() -> Bool {
        let (outstanding, jsonBytes) = inPlace { ($0.outstanding, $0.liveJSONBytes) }
        return intakeBytes.mustPause(limit: configuration.effectiveMaxQueuedBytes, outstanding: outstanding, jsonBytes: { jsonBytes })
    }

    /// Whether a paused intake may resume as far as bytes go (below half of `max_queued_bytes`).
    func intakeMayResumeForBytes() -> Bool {
        let (outstanding, jsonBytes) = inPlace { ($0.outstanding, $0.liveJSONBytes) }
        return intakeBytes.mayResume(limit: configuration.effectiveMaxQueuedBytes, outstanding: outstanding, jsonBytes: { jsonBytes })
    }
}

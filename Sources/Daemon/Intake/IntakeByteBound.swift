/// The intake read-ahead bound by bytes (`max_queued_bytes`, docs/limits.md): intake pauses while the
/// outstanding messages (the dispatcher's live set) hold at least that many bytes of JSON text, and resumes
/// once they hold less than half of it. It works beside `max_queued`, the bound by count; either pauses.
///
/// Counting the live set's bytes is O(live messages) (`Dispatcher.liveJSONBytes`), so it is done only at
/// decisions and amortized: `estimate` is the last count plus every byte submitted since (an upper bound,
/// as messages that ended since are not subtracted); it is recounted only when it reaches the bound. While
/// paused, a recount waits until the outstanding messages have halved since the pause. Each recount thus
/// follows at least half the bound's worth of submitted bytes, or a halving of the live set.
struct IntakeByteBound {
    /// An upper bound of the live set's JSON bytes. Starts above any bound, so the first check counts
    /// (messages restored from the store at start are live without having been submitted).
    private(set) var estimate = Int.max / 2
    /// The outstanding count when intake paused for bytes; nil while not paused for bytes.
    private(set) var pausedAtOutstanding: Int?

    /// `bytes` of JSON text were just submitted.
    mutating func submitted(_ bytes: Int) {
        estimate = min(estimate &+ bytes, Int.max / 2)
    }

    /// After a batch: whether intake must pause for bytes (the live set holds at least `limit` bytes).
    /// - Parameters:
    ///   - outstanding: the live set's size now.
    ///   - count: counts the live set's bytes (`Dispatcher.liveJSONBytes`).
    mutating func mustPause(limit: Int, outstanding: Int, count: () -> Int) -> Bool {
        guard estimate >= limit else { return false }
        estimate = count()
        guard estimate >= limit else { return false }
        pausedAtOutstanding = outstanding
        return true
    }

    /// Whether intake may resume as far as bytes go: not paused for bytes, or the live set holds less than
    /// half of `limit`. Counts only once the outstanding messages halved since the pause (or the last count).
    mutating func mayResume(limit: Int, outstanding: Int, count: () -> Int) -> Bool {
        guard let paused = pausedAtOutstanding else { return true }
        guard outstanding <= paused / 2 else { return false }
        estimate = count()
        if estimate < (limit + 1) / 2 {
            pausedAtOutstanding = nil
            return true
        }
        pausedAtOutstanding = outstanding
        return false
    }

    /// Intake was resumed regardless (intake closed, the pool stopped): forget the pause.
    mutating func reset() {
        pausedAtOutstanding = nil
    }
}

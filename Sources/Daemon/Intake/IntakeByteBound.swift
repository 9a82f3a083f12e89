/// The intake read-ahead bound by bytes (`max_queued_bytes`, docs/limits.md): intake pauses while the
/// outstanding messages (the dispatcher's live set) weigh at least that many bytes, and resumes once they
/// weigh less than half of it. A message weighs its JSON text (UTF-8 bytes) plus `bookkeepingBytes` for what
/// ccsd keeps about it. It works beside `max_queued`, the bound by count; either pauses intake.
///
/// The live set's JSON bytes are kept by the dispatcher's live table (`Dispatcher.liveJSONBytes`); the
/// weighing is still done only at decisions and amortized (it was O(live messages) when written): `estimate` is the last weight plus every message submitted since (an upper bound, as
/// messages that ended since are not subtracted), reweighed only when it reaches the bound. While paused,
/// the live set is reweighed only once the outstanding count fell to where, at the average weight seen at
/// the last weighing, it would weigh less than half the bound, or the bound changed (a reload: weighed at once).
struct IntakeByteBound {
    /// What ccsd keeps about one outstanding message besides its JSON text (its record, its place in the
    /// queues and maps, its timers), in bytes, as measured on a flood (about 1.5 KiB a message in all).
    static let bookkeepingBytes = 1024

    /// An upper bound of the live set's weight. Starts above any bound, so the first check weighs
    /// (messages restored from the store at start are live without having been submitted).
    private(set) var estimate = Int.max / 2
    /// While paused for bytes: the outstanding count at which to weigh again; nil while not paused for bytes.
    private(set) var reweighAt: Int?
    /// While paused for bytes: the bound `reweighAt` was worked out for. A reload that changes the bound
    /// (`max_queued_bytes`, or its default through `connections` and `window`) weighs again at once.
    private var reweighLimit: Int?

    /// One message of `jsonBytes` bytes of JSON text was just submitted.
    mutating func submitted(jsonBytes: Int) {
        estimate = min(estimate &+ jsonBytes &+ Self.bookkeepingBytes, Int.max / 2)
    }

    /// The weight of `outstanding` messages holding `jsonBytes` bytes of JSON text.
    static func weight(outstanding: Int, jsonBytes: Int) -> Int {
        jsonBytes + outstanding * bookkeepingBytes
    }

    /// After a batch: whether intake must pause for bytes (the live set weighs at least `limit`).
    /// - Parameters:
    ///   - outstanding: the live set's size now.
    ///   - jsonBytes: counts the live set's JSON bytes (`Dispatcher.liveJSONBytes`).
    mutating func mustPause(limit: Int, outstanding: Int, jsonBytes: () -> Int) -> Bool {
        guard estimate >= limit else { return false }
        estimate = Self.weight(outstanding: outstanding, jsonBytes: jsonBytes())
        guard estimate >= limit else { return false }
        reweighAt = Self.countBelowHalf(limit: limit, outstanding: outstanding, weight: estimate)
        reweighLimit = limit
        return true
    }

    /// Whether intake may resume as far as bytes go: not paused for bytes, or the live set weighs less than
    /// half of `limit`.
    mutating func mayResume(limit: Int, outstanding: Int, jsonBytes: () -> Int) -> Bool {
        guard let reweighAt else { return true }
        guard outstanding <= reweighAt || limit != reweighLimit else { return false }
        estimate = Self.weight(outstanding: outstanding, jsonBytes: jsonBytes())
        if estimate < (limit + 1) / 2 {
            reset()
            return true
        }
        self.reweighAt = Self.countBelowHalf(limit: limit, outstanding: outstanding, weight: estimate)
        reweighLimit = limit
        return false
    }

    /// The outstanding count below which `outstanding` messages weighing `weight` in all would, at their
    /// average weight, weigh less than half of `limit`; always below `outstanding`, so each weighing is
    /// followed by progress.
    private static func countBelowHalf(limit: Int, outstanding: Int, weight: Int) -> Int {
        let half = (limit + 1) / 2
        let estimate = Int((Double(outstanding) * Double(half) / Double(max(weight, 1))).rounded(.down))
        return max(0, min(estimate, outstanding - 1))
    }

    /// Intake was resumed regardless (intake closed, the pool stopped): forget the pause.
    mutating func reset() {
        reweighAt = nil
        reweighLimit = nil
    }
}

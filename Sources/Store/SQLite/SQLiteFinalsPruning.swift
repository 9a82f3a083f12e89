/// Where the SQLite store's pruning of final messages stands (schema version 3), without an index on the
/// finals' time: the store walks `finals` in accept_seq order from `cursor`, deleting the final messages past
/// their retention, and stops at the first message accepted within the retention (neither it nor any later
/// one can be due; accept order follows the wall clock, and where the clock stepped back the walk only stops
/// early). A final the walk passed that is not due yet (its message was live for long), or one written below
/// the cursor later (a message accepted before the retention and final only now), waits here in `waiting`
/// until it is.
///
/// The floor (`store_state.prune_floor`, written with each commit): no final below it is left unpruned but
/// those in `waiting`, so opening the store walks from it again and finds them (memory: one entry per waiting
/// final, at most about the messages live at one time). After a failed commit the walk restarts from the last
/// committed floor, as at opening.
struct SQLiteFinalsPruning {
    /// The next accept_seq the walk looks at.
    private(set) var cursor: Int64
    /// (final_at_ms, accept_seq) of finals below `cursor` not pruned yet, in decreasing final_at_ms (the next
    /// due at the end).
    private var waiting: [(finalAt: Int64, acceptSeq: Int64)] = []
    /// The lowest accept_seq in `waiting`, or `Int64.max`.
    private var lowestWaiting = Int64.max

    /// Starting from a committed floor.
    init(floor: Int64) { cursor = floor }

    /// No final below it is left unpruned but those waiting here.
    var floor: Int64 { min(cursor, lowestWaiting) }

    /// Finals waiting (tests).
    var waitingCount: Int { waiting.count }

    /// A final was written (`finalAt` in ms since 1970): remembered when the walk already passed its accept_seq.
    mutating func wrote(acceptSeq: Int64, finalAt: Int64) {
        guard acceptSeq < cursor else { return }
        wait(acceptSeq: acceptSeq, finalAt: finalAt)
    }

    /// The walk looked at the final of `acceptSeq` and moves past it (`due`: deleted by the caller).
    mutating func passed(acceptSeq: Int64, finalAt: Int64, due: Bool) {
        if !due { wait(acceptSeq: acceptSeq, finalAt: finalAt) }
        cursor = max(cursor, acceptSeq + 1)
    }

    /// Takes the waiting finals whose time is before `cutoff` (at most `limit`), for the caller to delete.
    mutating func takeDue(before cutoff: Int64, limit: Int) -> [Int64] {
        var due: [Int64] = []
        while due.count < limit, let next = waiting.last, next.finalAt < cutoff {
            due.append(next.acceptSeq)
            waiting.removeLast()
        }
        if !due.isEmpty { lowestWaiting = waiting.lazy.map(\.acceptSeq).min() ?? Int64.max }
        return due
    }

    private mutating func wait(acceptSeq: Int64, finalAt: Int64) {
        // Kept sorted by decreasing time: the first entry not later than this one.
        var low = 0, high = waiting.count
        while low < high {
            let middle = (low + high) / 2
            if waiting[middle].finalAt > finalAt { low = middle + 1 } else { high = middle }
        }
        waiting.insert((finalAt, acceptSeq), at: low)
        lowestWaiting = min(lowestWaiting, acceptSeq)
    }
}

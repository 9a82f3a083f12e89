/// Where the SQLite store's pruning of final messages stands (schema version 3), without an index on the
/// finals' time: the store walks `finals` in accept_seq order from `cursor`, deleting the final messages past
/// their retention, and stops at the first message accepted within the retention (neither it nor any later
/// one can be due, as accept order follows the wall clock).
/// - A final the walk passed that is not due yet (its message was live for long), or one written below the
///   cursor later (a message accepted before the retention and final only now), or one stamped before its
///   message's accept time (the clock stepped back between them: the walk, which goes by accept times, would
///   hold it as long as the step), waits here in `waiting` until it is due.
/// - Where the wall clock stepped back, messages accepted before the step carry times after `now`: the walk
///   steps over that run of them (`skipped`, one entry per step) and goes on with the messages accepted since,
///   and walks the run again once the retention after its first accept time has passed. So a step back holds
///   back only the finals stamped before it, as long as their own stamps say, as an index on time would.
///
/// The floor (`store_state.prune_floor`, written with each commit): no final below it is left unpruned but
/// those waiting or in a skipped run, so opening the store walks from it again and finds them (memory: one
/// entry per waiting final, at most about the messages live at one time, and one per clock step). After a
/// failed commit the walk restarts from the last committed floor, as at opening.
struct SQLiteFinalsPruning {
    /// The next accept_seq the walk looks at.
    private(set) var cursor: Int64
    /// (final_at_ms, accept_seq) of finals below `cursor` not pruned yet, in decreasing final_at_ms (the next
    /// due at the end).
    private var waiting: [(finalAt: Int64, acceptSeq: Int64)] = []
    /// The lowest accept_seq in `waiting`, or `Int64.max`.
    private var lowestWaiting = Int64.max
    /// Runs of accept_seqs [from, to) stepped over because their messages were accepted after `now` (the wall
    /// clock stepped back since): walked again from `from` once `notBefore` (ms since 1970) has passed.
    private(set) var skipped: [(from: Int64, to: Int64, notBefore: Int64)] = []

    /// Starting from a committed floor.
    init(floor: Int64) { cursor = floor }

    /// No final below it is left unpruned but those waiting here or in a skipped run.
    var floor: Int64 { skipped.reduce(min(cursor, lowestWaiting)) { min($0, $1.from) } }

    /// A final was written (`finalAt`, and its message's `acceptedAt`, in ms since 1970): remembered when the
    /// walk already passed its accept_seq, or when it is stamped before its message's accept time.
    mutating func wrote(acceptSeq: Int64, finalAt: Int64, acceptedAt: Int64) {
        guard acceptSeq < cursor || acceptedAt > finalAt else { return }
        wait(acceptSeq: acceptSeq, finalAt: finalAt)
    }

    /// The walk looked at the final of `acceptSeq` and moves past it (`due`: deleted by the caller).
    mutating func passed(acceptSeq: Int64, finalAt: Int64, due: Bool) {
        if !due { wait(acceptSeq: acceptSeq, finalAt: finalAt) }
        cursor = max(cursor, acceptSeq + 1)
    }

    /// The walk steps over [from, to) (their messages accepted after now, the first at `firstAcceptedAt`), to
    /// walk it again once the retention after that time (`retention`, ms) has passed.
    mutating func skip(from: Int64, to: Int64, firstAcceptedAt: Int64, retention: Int64) {
        skipped.append((from, to, firstAcceptedAt + retention))
        cursor = max(cursor, to)
    }

    /// The skipped run at `index` was walked again: it goes on from `from` (not before `notBefore`, ms since
    /// 1970, when given: the walk stopped at a message accepted within the retention), or it was walked to its
    /// end (nil `from`) and is dropped.
    mutating func walkedSkipped(_ index: Int, resumeAt from: Int64?, notBefore: Int64? = nil) {
        guard let from, from < skipped[index].to else {
            skipped.remove(at: index)
            return
        }
        skipped[index].from = from
        if let notBefore { skipped[index].notBefore = notBefore }
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
        // Kept sorted by decreasing time: before the first entry not later than this one.
        waiting.insert((finalAt, acceptSeq), at: waiting.partitioningIndex { $0.finalAt <= finalAt })
        lowestWaiting = min(lowestWaiting, acceptSeq)
    }
}

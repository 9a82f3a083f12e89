/// The rule of `max_event_backlog` (docs/limits.md): downstream intake closes when the events journaled and
/// not yet acknowledged by the slowest registered consumer reach the limit, and opens again once they fall to
/// half of it. Pure: numbers in, a transition out; `CCSDaemon` (CCSDaemon+EventBacklog.swift) applies it.
///
/// | backlog (limit 10) | gate before | gate after | transition |
/// |---|---|---|---|
/// | 9 | open | open | none |
/// | 10 | open | closed | `.closed` |
/// | 12 | closed | closed | none (upstream events still come in) |
/// | 6 | closed | closed | none |
/// | 5 | closed | open | `.opened` |
public struct EventBacklogGate: Sendable, Equatable {
    /// A change of the gate, reported once per crossing.
    public enum Transition: Sendable, Equatable {
        /// The backlog reached the limit: new downstream messages wait.
        case closed
        /// The backlog fell to half the limit: intake takes messages again.
        case opened
    }

    /// New downstream messages wait while true.
    public private(set) var isClosed = false

    public init() {}

    /// Applies the backlog now seen.
    /// - Parameters:
    ///   - backlog: events journaled past the slowest registered consumer's cursor (count, ≥ 0).
    ///   - limit: `max_event_backlog` (≥ 1); the gate closes at it and opens at `limit / 2` or below.
    /// - Returns: the transition, or nil when the gate stays as it was.
    public mutating func update(backlog: Int64, limit: Int) -> Transition? {
        if !isClosed, backlog >= Int64(limit) {
            isClosed = true
            return .closed
        }
        if isClosed, backlog <= Int64(limit / 2) {
            isClosed = false
            return .opened
        }
        return nil
    }

    /// The backlog over `cursors` (each registered consumer's last acknowledged seq) when the journal's last
    /// seq is `lastSeq`: `lastSeq` minus the lowest cursor, and the consumer holding it. 0 (and nil) with no
    /// registered consumer: nobody is waited for.
    public static func backlog(lastSeq: Int64, cursors: [String: Int64]) -> (count: Int64, slowest: String?) {
        guard let slowest = cursors.min(by: { $0.value < $1.value || ($0.value == $1.value && $0.key < $1.key) }) else {
            return (0, nil)
        }
        return (max(0, lastSeq - slowest.value), slowest.key)
    }
}

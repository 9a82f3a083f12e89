@testable import CCS

extension Dispatcher {
    /// Plays a store that answers at once: every `.persist` with `persisted(.stored)`, every `.record` with
    /// `recorded(through:)`. Returns every action, the answers' included, in order.
    mutating func answering(_ actions: [DispatcherAction], now: Double) -> [DispatcherAction] {
        var all = actions
        var stored: [PersistResult] = []
        var through: UInt64?
        for action in actions {
            switch action {
            case .persist(let record, let line): stored.append(PersistResult(messageID: record.messageID, line: line, outcome: .stored))
            case .record(let request): through = request.id
            default: break
            }
        }
        if !stored.isEmpty { all += answering(persisted(stored, now: now), now: now) }
        if let through { all += answering(recorded(through: through, now: now), now: now) }
        return all
    }

    /// Submits one message to a store that answers at once.
    mutating func acceptAnswered(_ record: MessageRecord, line: Int? = nil, now: Double) -> [DispatcherAction] {
        answering(submit([(record, line)], now: now), now: now)
    }
}

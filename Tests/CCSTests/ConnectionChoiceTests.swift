import Testing
@testable import CCS

/// `ConnectionChoice` against the rule it serves (most free window, ties to the lowest id), over random
/// changes; the dispatcher's own use is checked against its scan in every debug run (`bestConnection`'s
/// assertion), which the dispatcher simulation suites drive through connects, sends, acks, drains and closes.
struct ConnectionChoiceTests {
    @Test(arguments: [1, 2, 3, 4, 5])
    func theTopCurrentEntryIsTheBestConnection(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var free: [Int: Int] = [:]  // the truth: connections that can send, by id
        var choice = ConnectionChoice()
        for _ in 0..<5_000 {
            let id = Int(random.next() % 40)
            switch random.next() % 4 {
            case 0:  // a send: less free window (noted after the send, as the dispatcher does)
                if let value = free[id] {
                    free[id] = value > 1 ? value - 1 : nil
                    if let now = free[id] { choice.note(id, free: now) } else { choice.noteCannotSend(id) }
                }
            case 1, 2:  // an ack, or a connection that became ready: more free window
                let value = min((free[id] ?? 0) + 1, 100)
                free[id] = value
                choice.note(id, free: value)
            default:  // drained or closed: not noted, left to lazy deletion
                free[id] = nil
            }
            let expected = free.max { a, b in a.value < b.value || (a.value == b.value && a.key > b.key) }?.key
            let best = choice.best { free[$0.id] == $0.free }
            #expect(best == expected)
            if choice.heap.count > 4 * free.count + 64 {
                choice.rebuild(free.map { .init(free: $0.value, id: $0.key) })
            }
        }
    }

    /// Sends on the connection at the top change its entry in place (no stale entry left above the next
    /// answer), and a connection that can take nothing more leaves the top at once.
    @Test func theTopConnectionIsUpdatedInPlace() {
        var choice = ConnectionChoice()
        choice.note(3, free: 2)
        choice.note(1, free: 100)
        for free in stride(from: 99, through: 1, by: -1) {
            choice.note(1, free: free)
            #expect(choice.heap.count == 2)
            #expect(choice.best { _ in true } == (free >= 2 ? 1 : 3))  // ties go to the lower id
        }
        choice.noteCannotSend(1)  // not at the top: left for lazy deletion
        #expect(choice.heap.count == 2)
        choice.noteCannotSend(3)
        #expect(choice.heap.map(\.id) == [1])
    }

    @Test func staleEntriesAreDroppedAndTiesGoToTheLowestID() {
        var choice = ConnectionChoice()
        choice.note(7, free: 3)
        choice.note(2, free: 3)
        choice.note(9, free: 5)
        #expect(choice.best { _ in true } == 9)
        // 9 closed: its entry is stale; of the two with 3 free, the lower id wins.
        #expect(choice.best { $0.id != 9 } == 2)
        #expect(choice.heap.count == 2)
    }
}

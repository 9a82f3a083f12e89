import Testing
import CCS
@testable import Daemon

/// `DispatcherActionQueue` hands out a call's actions in their order, each once, whatever their number,
/// and whether the list it took is shared (then copied first) or its own.
@Suite struct DispatcherActionQueueTests {
    static func actions(_ count: Int) -> [DispatcherAction] {
        (0..<count).map { index in
            let record = MessageRecord(messageID: "m-\(index)", json: #"{"message_id":"m-\#(index)"}"#, to: "token-\(index)",
                                       rateKey: "token-\(index)", acceptedAt: 0, acceptedAtUnixMillis: 0, timeToLive: 60)
            switch index % 4 {
            case 0: return .send(connection: index, record: record)
            case 1: return .record(RecordRequest(id: UInt64(index), event: .accepted(messageID: "m-\(index)"), finalMessageID: "m-\(index)"))
            case 2: return .close(connection: index)
            default: return .saveProgress(record)
            }
        }
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 8, 101])
    func actionsComeOutInOrderOnce(count: Int) {
        let expected = Self.actions(count)
        // A shared list: the queue's turn-around copies it, and `expected` stays as it was.
        var shared = DispatcherActionQueue(expected)
        var out: [DispatcherAction] = []
        while let action = shared.next() { out.append(action) }
        #expect(out == expected)
        #expect(shared.next() == nil)
        #expect(expected == Self.actions(count))
        // A list of its own, moved in.
        var owned = DispatcherActionQueue(Self.actions(count))
        out.removeAll()
        while let action = owned.next() { out.append(action) }
        #expect(out == expected)
    }
}

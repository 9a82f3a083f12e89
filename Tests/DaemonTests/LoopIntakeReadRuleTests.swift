@testable import Daemon
import Testing

/// When `LoopIntake` reads on in a turn of its own after a read, and when it waits for its watch to call again.
@Suite struct LoopIntakeReadRuleTests {
    static let capacity = IntakeReader.readSize

    /// With Dispatch (not level-triggered) it reads on after every read: Dispatch merges readiness events and
    /// stops watching a pipe once it reported its end.
    @Test(arguments: [1, 1430, capacity - 1, capacity])
    func withDispatchEveryReadReadsOn(count: Int) {
        #expect(LoopIntake.readsOnLater(levelTriggered: false, read: count, of: Self.capacity))
    }

    /// On the epoll loop a short read waits for the watch (which calls again for bytes left or the end); a
    /// full read reads on, so a producer far ahead is read as fast as before.
    @Test func onTheEpollLoopOnlyAFullReadReadsOn() {
        #expect(!LoopIntake.readsOnLater(levelTriggered: true, read: 1, of: Self.capacity))
        #expect(!LoopIntake.readsOnLater(levelTriggered: true, read: 1430, of: Self.capacity))
        #expect(!LoopIntake.readsOnLater(levelTriggered: true, read: Self.capacity - 1, of: Self.capacity))
        #expect(LoopIntake.readsOnLater(levelTriggered: true, read: Self.capacity, of: Self.capacity))
    }
}

import CCS
import Daemon
import Foundation
import Synchronization
import Testing

/// `SignalMask`: once the handled signals are blocked, every thread started afterwards blocks them too, so
/// the kernel can hand a SIGTERM to no thread but the signal source's (which reads it from its signalfd).
@Suite struct SignalMaskTests {
    @Test func threadsStartedAfterTheBlockInheritIt() {
        let result = Locked<(before: [Bool], after: [Bool])?>(nil)
        let done = DispatchSemaphore(value: 0)
        // In a thread of its own, so that the test runner's threads keep their masks.
        let outer = Thread {
            // Start from an unblocked mask (the test runner's threads may block some signals already).
            var set = sigset_t()
            sigemptyset(&set)
            for signal in SignalMask.handled { sigaddset(&set, signal) }
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            let before = SignalMask.handled.map(SignalMask.isBlocked)
            SignalMask.blockHandledSignals()
            let inner = Thread {
                result.withLock { $0 = (before, SignalMask.handled.map(SignalMask.isBlocked)) }
                done.signal()
            }
            inner.start()
        }
        outer.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        let masks = result.withLock { $0 }
        #expect(masks?.before == [false, false, false], "unblocked before")
        #expect(masks?.after == [true, true, true])
    }
}

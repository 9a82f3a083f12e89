import Glibc
import Testing
@testable import CCS

/// The small system pieces that stand in for Foundation's `Thread`, `NSCondition`, `FileHandle` and string
/// helpers in the daemon's modules (`Sources/CCS/System`).
@Suite struct SystemUtilitiesTests {
    @Test func aDetachedThreadRunsItsBodyOnAnotherThreadUnderItsName() {
        let condition = ThreadCondition()
        let seen = Locked<(ran: Bool, name: String, sameThread: Bool)?>(nil)
        let caller = pthread_self()
        condition.lock()
        DetachedThread.start(name: "ccsd-test-thread-name") {
            var name = [CChar](repeating: 0, count: 32)
            let fd = open("/proc/thread-self/comm", O_RDONLY)
            if fd >= 0 {
                _ = read(fd, &name, 31)
                close(fd)
            }
            let comm = String(cString: name).trimmingNewlines()
            seen.withLock { $0 = (true, comm, pthread_equal(pthread_self(), caller) != 0) }
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while seen.withLock({ $0 == nil }) {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
        let result = seen.withLock { $0 }
        #expect(result?.ran == true)
        #expect(result?.sameThread == false)
        #expect(result?.name == "ccsd-test-threa")  // Linux keeps 15 bytes of a thread's name
    }

    @Test func aConditionWaitEndsAtItsDeadlineWhenNobodySignals() {
        let condition = ThreadCondition()
        let start = ContinuousClock.now
        condition.lock()
        let signalled = condition.wait(until: start.advanced(by: .milliseconds(50)))
        condition.unlock()
        #expect(!signalled)
        #expect(start.duration(to: .now) >= .milliseconds(50))
        condition.lock()
        #expect(!condition.wait(until: start))  // a deadline already passed
        condition.unlock()
    }

    @Test func sleepWaitsAtLeastItsFraction() {
        let start = ContinuousClock.now
        DetachedThread.sleep(seconds: 0.03)
        #expect(start.duration(to: .now) >= .milliseconds(30))
        DetachedThread.sleep(seconds: -1)  // nothing
    }

    @Test func trimmingAndPadding() {
        #expect(" \t a b \r\n".trimmingWhitespace() == "a b")
        #expect("\u{2028}x\u{85}".trimmingWhitespace() == "x")
        #expect(" \n ".trimmingWhitespace() == "")
        #expect("\n a \r\n".trimmingNewlines() == " a ")
        #expect("\n\n".trimmingNewlines() == "")
        #expect("ab".padded(to: 4) == "ab  ")
        #expect("abcdef".padded(to: 4) == "abcdef")
        #expect("é".padded(to: 2) == "é ")  // characters, not bytes
    }

    @Test func zeroPaddedAndThreeDecimals() {
        #expect(7.zeroPadded(3) == "007")
        #expect(1234.zeroPadded(2) == "1234")
        #expect((-5).zeroPadded(3) == "-005")
        #expect(Int32(2026).zeroPadded(4) == "2026")
        #expect(1.5.threeDecimals == "1.500")
        #expect(0.0004.threeDecimals == "0.000")
        #expect(2.0006.threeDecimals == "2.001")
        #expect((-0.25).threeDecimals == "-0.250")
    }
}

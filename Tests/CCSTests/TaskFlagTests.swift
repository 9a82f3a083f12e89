@testable import CCS
import Dispatch
import Synchronization
import Testing

/// `TaskFlag` reads what a `@TaskLocal` Bool would give each task, on its fast path (nothing bound anywhere)
/// and on its slow path (some binding open).
@Suite struct TaskFlagTests {
    @Test func unboundReadsFalseAndBindingsNestAndEnd() {
        let flag = TaskFlag()
        #expect(flag.value == false)
        flag.withValue(true) {
            #expect(flag.value == true)
            flag.withValue(false) { #expect(flag.value == false) }
            #expect(flag.value == true)
        }
        #expect(flag.value == false)
    }

    @Test func aBindingIsSeenOnlyByItsOwnTask() {
        let flag = TaskFlag()
        let seenElsewhere = Mutex<Bool?>(nil)
        flag.withValue(true) {
            // Another thread, with the binding open here: it reads its own (unbound) value.
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                seenElsewhere.withLock { $0 = flag.value }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            #expect(flag.value == true)
        }
        #expect(seenElsewhere.withLock { $0 } == false)
    }

    @Test func throwsTheOperationsError() {
        struct Failure: Error, Equatable {}
        let flag = TaskFlag()
        #expect(throws: Failure()) { try flag.withValue(true) { () throws(Failure) in throw Failure() } }
        #expect(flag.value == false)
    }
}

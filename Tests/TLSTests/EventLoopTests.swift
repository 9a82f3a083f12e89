import Dispatch
import Testing
import TLS

@Suite struct EventLoopTests {
    @Test func executeRunsOnTheLoopAndInEventLoopTellsWhere() async throws {
        let loop = EventLoop(label: "test.execute")
        #expect(!loop.inEventLoop)
        let inside = try await loop.submit { loop.inEventLoop }
        #expect(inside)
        let other = EventLoop(label: "test.other")
        #expect(try await other.submit { loop.inEventLoop } == false)
    }

    @Test func submitAndWaitReturnsAndRethrows() {
        let loop = EventLoop(label: "test.sync")
        #expect(loop.submitAndWait { loop.inEventLoop })
        struct Boom: Error {}
        #expect(throws: Boom.self) { try loop.submitAndWait { throw Boom() } }
    }

    @Test func submitPropagatesErrors() async {
        let loop = EventLoop(label: "test.async")
        struct Boom: Error {}
        await #expect(throws: Boom.self) { try await loop.submit { throw Boom() } }
    }

    @Test func scheduledWorkRunsInOrderAndCancelledWorkDoesNot() async throws {
        let loop = EventLoop(label: "test.timers")
        let log = EventLog()
        try await loop.submit {
            let start = DispatchTime.now()
            loop.schedule(after: 0.05) {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                log.append(.data([elapsed >= 0.045 ? 1 : 0]))
            }
            let cancelled = loop.schedule(after: 0.01) { log.append(.drained) }
            cancelled.cancel()
            #expect(!cancelled.isPending)
            loop.schedule(after: 0.1) { log.append(.ready) }
        }
        let events = try await log.wait("both timers") { $0.contains(.ready) }
        #expect(events == [.data([1]), .ready])
    }
}

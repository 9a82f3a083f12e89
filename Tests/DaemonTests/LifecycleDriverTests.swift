import CCS
import Daemon
import Testing
import TestSupport
import XMLStream
import XMPP

/// The lifecycle driven through the seams (`LoopScheduler`, `XMPPConnectionFactory`, `EventSink`) by a
/// minimal driver (the real one, `CCSDaemon`, is tested in DaemonDriverTests): the pieces fit, and time is bounded on the
/// manual clock. No sockets.
@Suite struct LifecycleDriverTests {
    /// Performs lifecycle actions on a manual loop with mock connections; answers on later turns.
    final class Driver: XMPPConnectionDelegate {
        var lifecycle: DaemonLifecycle
        let loop = ManualLoop()
        let factory: MockConnectionFactory
        let outlet = MemoryOutlet()
        var connections: [Int: any XMPPConnection] = [:]
        var timer: (any ScheduledWork)?
        var performed: [String] = []
        var exit: (code: DaemonLifecycle.ExitCode, at: Duration)?

        init(configuration: DaemonLifecycle.Configuration, connections: Int = 2) {
            lifecycle = DaemonLifecycle(configuration: configuration)
            factory = MockConnectionFactory(loop: loop)
            self.connectionCount = connections
        }
        let connectionCount: Int

        func later(_ event: @escaping (inout DaemonLifecycle, ContinuousClock.Instant) -> [DaemonLifecycle.Action]) {
            loop.enqueue { [self] in perform(event(&lifecycle, loop.now)) }
        }

        func perform(_ actions: [DaemonLifecycle.Action]) {
            for action in actions {
                switch action {
                case .startStore: later { $0.partStarted(.store, now: $1) }
                case .startPool:
                    for id in 0..<connectionCount {
                        let connection = factory.makeConnection(id: id, endpoint: Endpoint(host: "h", port: 5235), delegate: self)
                        connections[id] = connection
                        connection.start()
                    }
                    later { $0.partStarted(.pool, now: $1) }
                case .startIntake: later { $0.partStarted(.intake, now: $1) }
                case .closeStreams:
                    if connections.isEmpty { later { $0.connectionsClosed(now: $1) } }
                    connections.values.forEach { $0.close() }
                case .abortStreams: connections.values.forEach { $0.abort() }
                case .scheduleTimer(let deadline):
                    timer?.cancel()
                    timer = loop.schedule(at: deadline) { [self] in perform(lifecycle.timerFired(now: loop.now)) }
                case .exit(let code):
                    timer?.cancel()
                    exit = (code, loop.clock.elapsed)
                case .log: continue
                case .closeIntake, .abandonOutstanding, .flushStore, .closeStore: break
                }
                performed.append("\(action)")
            }
        }

        /// Hands an event over; a failed flush stops the daemon (exit 4).
        func handOver(_ line: String) {
            outlet.append(line)
            if !outlet.flush() { perform(lifecycle.outletFailed(reason: outlet.failure ?? "unknown", now: loop.now)) }
        }

        func connectionDidBecomeReady(_ connection: any XMPPConnection, jid: String) {}
        func connection(_ connection: any XMPPConnection, didReceive stanza: XMLElement) {}
        func connection(_ connection: any XMPPConnection, didEndWith error: XMPPError) {
            connections[connection.connectionID] = nil
            if connections.isEmpty { perform(lifecycle.connectionsClosed(now: loop.now)) }
        }
    }

    @Test func sigtermWithPoliteServersExitsAtOnce() {
        let driver = Driver(configuration: .init())
        driver.perform(driver.lifecycle.start(now: driver.loop.now))
        driver.loop.run()
        #expect(driver.lifecycle.state == .running)
        #expect(driver.factory.made.map(\.started) == [true, true])
        driver.perform(driver.lifecycle.signal(.terminate, now: driver.loop.now))
        #expect(driver.exit == nil)  // the ends come on later turns
        driver.loop.run()
        #expect(driver.exit?.code == .done)
        #expect(driver.exit?.at == .zero)
        #expect(driver.factory.made.map(\.aborted) == [false, false])
    }

    @Test func serversThatNeverCloseAreAbortedAfterTheCloseTimeout() {
        let driver = Driver(configuration: .init(closeTimeout: .seconds(3)))
        driver.factory.closesWhenAsked = false
        driver.perform(driver.lifecycle.start(now: driver.loop.now))
        driver.loop.run()
        driver.perform(driver.lifecycle.signal(.terminate, now: driver.loop.now))
        driver.loop.advance(by: .seconds(2))
        #expect(driver.exit == nil)
        driver.loop.advance(by: .seconds(60))
        #expect(driver.exit?.code == .done)
        #expect(driver.exit?.at == .seconds(3))
        #expect(driver.factory.made.map(\.aborted) == [true, true])
        #expect(driver.loop.pendingDeadlines.isEmpty)
    }

    @Test func aFailingOutletStopsWithExit4WithinTheFailureBound() {
        let driver = Driver(configuration: .init(failureCloseTimeout: .seconds(1)))
        driver.factory.closesWhenAsked = false
        driver.perform(driver.lifecycle.start(now: driver.loop.now))
        driver.loop.run()
        driver.outlet.failNextFlush(reason: "No space left on device")
        driver.handOver("{\"event\":\"upstream\"}\n")
        driver.loop.advance(by: .seconds(10))
        #expect(driver.exit?.code == .outletFailed)
        #expect(driver.exit?.at == .seconds(1))
        #expect(driver.outlet.lines.isEmpty)
    }
}

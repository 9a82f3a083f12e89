import CCS
import Daemon
import Testing
import TestSupport
import XMLStream
import XMPP

/// The test-support pieces behave like what they stand in for.
@Suite struct ManualLoopTests {
    @Test func timersRunInDeadlineOrderEachAtItsDeadline() {
        let loop = ManualLoop()
        let t0 = loop.now
        var ran: [(String, Duration)] = []
        loop.schedule(at: t0 + .seconds(3)) { ran.append(("c", loop.now - t0)) }
        loop.schedule(at: t0 + .seconds(1)) { ran.append(("a", loop.now - t0)) }
        loop.schedule(at: t0 + .seconds(2)) { ran.append(("b", loop.now - t0)) }
        loop.schedule(at: t0 + .seconds(1)) { ran.append(("a2", loop.now - t0)) }  // same deadline: after "a"
        loop.advance(by: .milliseconds(2500))
        #expect(ran.map(\.0) == ["a", "a2", "b"])
        #expect(ran.map(\.1) == [.seconds(1), .seconds(1), .seconds(2)])
        #expect(loop.now - t0 == .milliseconds(2500))
        loop.advance(by: .seconds(10))
        #expect(ran.map(\.0) == ["a", "a2", "b", "c"])
        #expect(ran.last?.1 == .seconds(3))
    }

    @Test func cancelledTimersDoNotRun() {
        let loop = ManualLoop()
        var ran = false
        let handle = loop.schedule(at: loop.now + .seconds(1)) { ran = true }
        #expect(loop.pendingDeadlines.count == 1)
        handle.cancel()
        #expect(loop.pendingDeadlines.isEmpty)
        loop.advance(by: .seconds(5))
        #expect(!ran)
    }

    @Test func enqueuedWorkRunsOnALaterTurnAndBeforeTheNextTimer() {
        let loop = ManualLoop()
        var order: [String] = []
        loop.schedule(at: loop.now + .seconds(1)) {
            order.append("timer 1")
            loop.enqueue { order.append("work of timer 1") }
        }
        loop.schedule(at: loop.now + .seconds(1)) { order.append("timer 2") }
        loop.enqueue { order.append("work") }
        #expect(order.isEmpty)  // enqueue never runs inside the call
        loop.run()
        #expect(order == ["work"])
        loop.advance(by: .seconds(1))
        #expect(order == ["work", "timer 1", "work of timer 1", "timer 2"])
    }

    @Test func aTimerAlreadyDueRunsOnTheNextRun() {
        let loop = ManualLoop()
        var ran = false
        loop.schedule(at: loop.now - .seconds(1)) { ran = true }
        #expect(!ran)
        loop.run()
        #expect(ran)
    }
}

@Suite struct MockXMPPConnectionTests {
    final class Recorder: XMPPConnectionDelegate {
        var events: [String] = []
        func connectionDidBecomeReady(_ connection: any XMPPConnection, jid: String) { events.append("ready \(connection.connectionID)") }
        func connection(_ connection: any XMPPConnection, didReceive stanza: XMLElement) { events.append("stanza \(stanza.name)") }
        func connection(_ connection: any XMPPConnection, didEndWith error: XMPPError) {
            events.append("end \(connection.connectionID) \(error.kind == .closedLocally ? "closedLocally" : "\(error.kind)")")
        }
    }

    @Test func sendsAreRecordedOnceReadyAndCallbacksComeOnLaterTurns() {
        let loop = ManualLoop()
        let recorder = Recorder()
        let factory = MockConnectionFactory(loop: loop)
        let connection = factory.makeConnection(id: 7, endpoint: Endpoint(host: "h", port: 5235), delegate: recorder)
        connection.start()
        #expect(!connection.send(raw: "<message/>"))  // not logged in yet
        let mock = try! #require(factory.connection(7))
        mock.deliverReady()
        mock.deliver(XMLElement(name: "message"))
        #expect(recorder.events.isEmpty)
        loop.run()
        #expect(recorder.events == ["ready 7", "stanza message"])
        #expect(connection.send(raw: "<message id='1'/>"))
        #expect(mock.sent == ["<message id='1'/>"])
        connection.close()
        #expect(recorder.events.count == 2)  // not inside close()
        loop.run()
        #expect(recorder.events.last == "end 7 closedLocally")
        #expect(mock.closeCalls == 1)
        #expect(!connection.send(raw: "<message id='2'/>"))
    }

    @Test func aServerThatNeverClosesEndsOnlyOnAbort() {
        let loop = ManualLoop()
        let recorder = Recorder()
        let factory = MockConnectionFactory(loop: loop)
        factory.closesWhenAsked = false
        let connection = factory.makeConnection(id: 1, endpoint: Endpoint(host: "h", port: 5235), delegate: recorder)
        connection.start()
        connection.close()
        loop.advance(by: .seconds(60))
        #expect(recorder.events.isEmpty)
        connection.abort()
        loop.run()
        #expect(recorder.events == ["end 1 closedLocally"])
        #expect(factory.connection(1)?.aborted == true)
    }

    @Test func theEndIsReportedOnce() {
        let loop = ManualLoop()
        let recorder = Recorder()
        let mock = MockXMPPConnection(connectionID: 2, endpoint: Endpoint(host: "h", port: 5235), loop: loop, delegate: recorder)
        mock.deliverEnd(XMPPError(.transport, message: "reset"))
        mock.abort()
        loop.run()
        #expect(recorder.events == ["end 2 transport"])
    }
}

@Suite struct MemoryOutletTests {
    @Test func recordsFlushedLinesAndFailsWhenTold() {
        let outlet = MemoryOutlet()
        let sink: any EventSink = outlet
        sink.append("{\"a\":1}\n")
        #expect(outlet.lines.isEmpty)
        #expect(sink.flush())
        #expect(outlet.lines == ["{\"a\":1}\n"])
        outlet.failNextFlush(reason: "Broken pipe")
        sink.append("{\"b\":2}\n")
        #expect(!sink.flush())
        #expect(sink.failure == "Broken pipe")
        #expect(!sink.flush())  // stays failed
        #expect(outlet.lines == ["{\"a\":1}\n"])
    }
}

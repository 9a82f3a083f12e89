import Testing
@testable import CCS

/// CCS messages on a connection that is bound but not yet reported ready (issue 7 item 2): a server may
/// deliver before it answers the session request, so the pool takes them on a `.connecting` session.
@Suite struct DispatcherEarlyTrafficTests {
    typealias Harness = DispatcherTests.Harness

    @Test func upstreamAndReceiptBeforeReadyAreHandedOverAndAckedOnThatConnection() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        let upstream = InboundMessage.Upstream(messageID: "u-1", from: "device-1", data: .object([:]))
        h.receive(.upstream(upstream), on: 1)
        h.receive(.receipt(.init(messageID: "dr2:m-0", from: "gcm.googleapis.com")), on: 1)
        // A redelivery on the same connection before ready: ACKed again, handed over once.
        h.receive(.upstream(upstream), on: 1)
        #expect(h.acks.map(\.messageID) == ["u-1", "dr2:m-0", "u-1"])
        #expect(h.acks.allSatisfy { $0.connection == 1 })
        #expect(h.acks.first?.to == "device-1")
        #expect(h.events.filter { if case .upstream = $0 { true } else { false } }.count == 1)
        #expect(h.events.filter { if case .receipt = $0 { true } else { false } }.count == 1)
        // Nothing was sent before login; an ack there matches nothing and changes nothing.
        #expect(h.sends.isEmpty)
        h.ack("m-1", on: 1)
        #expect(h.dispatcher.counters.unmatchedResolutions == 1)
        #expect(h.finalEvents(for: "m-1").isEmpty)
        h.apply(h.dispatcher.connectionReady(1, now: 0))
        #expect(h.sends.map(\.messageID) == ["m-1"])
    }

    /// CONNECTION_DRAINING before ready: the connection never takes a message, and a replacement opens at
    /// once on the other endpoint (ccs-protocol.md §5).
    @Test func drainingBeforeReadyKeepsTheConnectionFromEverSending() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        h.receive(.control(controlType: .connectionDraining), on: 1)
        #expect(h.dispatcher.sessions[1]?.phase == .draining)
        #expect(h.opened.count == 2)
        #expect(h.opened.last?.connection == 2)
        h.apply(h.dispatcher.connectionReady(1, now: 0))
        #expect(h.sends.isEmpty, "a connection drained while logging in took a message")
        h.apply(h.dispatcher.connectionReady(2, now: 0))
        #expect(h.sends.map(\.connection) == [2])
    }
}

import Testing
@testable import CCS

private let primary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5235)
private let secondary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5236)

/// A reload while the pool runs (`Dispatcher.reconfigure`): connections open or leave the pool without
/// losing a message. Transcripts, no sockets, no sleeps.
@Suite struct DispatcherReconfigureTests {
    typealias Harness = DispatcherTests.Harness

    static func configuration(_ h: Harness, connections: Int, maxAttempts: Int? = nil, window: Int? = nil) -> DispatcherConfiguration {
        var next = h.dispatcher.configuration
        next.connections = connections
        if let maxAttempts { next.maxAttempts = maxAttempts }
        if let window { next.window = window }
        return next
    }

    @Test func moreConnectionsOpenAtOnceAndTakeMessages() {
        var h = Harness(connections: 1, window: 2)
        h.startReady()
        for i in 0..<6 { h.accept("m-\(i)") }
        #expect(h.sends.count == 2)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 3), now: h.now))
        #expect(h.opened.map(\.connection) == [1, 2, 3])
        #expect(h.opened.allSatisfy { $0.endpoint == primary })
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        h.apply(h.dispatcher.connectionReady(3, now: h.now))
        #expect(h.sends.count == 6)
        #expect(Set(h.sends.map(\.connection)) == [1, 2, 3])
        #expect(h.inFlight(2) == 2 && h.inFlight(3) == 2)
    }

    @Test func fewerConnectionsDrainTheirMessagesInFlightThenClose() {
        var h = Harness(connections: 3, window: 2, ackTimeout: 1000)  // no ack timeout in this transcript
        h.startReady()
        for i in 0..<6 { h.accept("m-\(i)") }
        #expect(h.inFlight(1) == 2 && h.inFlight(2) == 2 && h.inFlight(3) == 2)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 1), now: h.now))
        // Slots 2 and 3 leave: their connections drain (nothing new), nothing is closed while messages are in flight.
        #expect(h.closes.isEmpty)
        #expect(h.dispatcher.sessions[2]?.phase == .draining && h.dispatcher.sessions[3]?.phase == .draining)
        h.accept("m-new")
        let onTwo = h.sends.filter { $0.connection == 2 }.map(\.messageID)
        let onThree = h.sends.filter { $0.connection == 3 }.map(\.messageID)
        #expect(h.sends.count == 6)  // m-new waits for connection 1's window
        // Their answers still resolve there; the last one closes the connection.
        h.ack(onTwo[0], on: 2)
        #expect(h.closes.isEmpty)
        h.ack(onTwo[1], on: 2)
        #expect(h.closes == [2])
        for id in onThree { h.ack(id, on: 3) }
        #expect(h.closes == [2, 3])
        // The ends are local closes: no reconnect, nothing resent.
        let opened = h.opened.count
        h.apply(h.dispatcher.connectionEnded(2, .closedLocally, now: h.now))
        h.apply(h.dispatcher.connectionEnded(3, .closedLocally, now: h.now))
        h.advance(to: 120)  // past any reconnect backoff
        #expect(h.opened.count == opened)
        // Connection 1 carries on and everything ends acked, once.
        for _ in 0..<4 {
            guard let next = h.sends.first(where: { $0.connection == 1 && h.finalEvents(for: $0.messageID).isEmpty }) else { break }
            h.ack(next.messageID, on: 1)
        }
        for id in (0..<6).map({ "m-\($0)" }) + ["m-new"] {
            #expect(h.finalEvents(for: id).count == 1, "\(id)")
        }
        #expect(h.dispatcher.outstanding == 0)
    }

    @Test func aLeavingConnectionThatNeverAnswersIsClosedAfterTheDrainTimeoutAndItsMessagesResent() {
        var h = Harness(connections: 2, window: 2, ackTimeout: 1000)  // no ack timeout before the drain timeout
        h.startReady()
        for i in 0..<4 { h.accept("m-\(i)") }
        let onTwo = h.sends.filter { $0.connection == 2 }.map(\.messageID)
        #expect(onTwo.count == 2)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 1), now: h.now))
        #expect(h.closes.isEmpty)
        h.advance(to: h.dispatcher.configuration.drainTimeout - 1)
        #expect(h.closes.isEmpty)
        h.advance(to: h.dispatcher.configuration.drainTimeout)
        #expect(h.closes == [2])
        // Closed with messages in flight: they are resent on connection 1, same message_id, not an attempt.
        for id in h.sends.filter({ $0.connection == 1 }).map(\.messageID) { h.ack(id, on: 1) }
        h.apply(h.dispatcher.connectionEnded(2, .closedLocally, now: h.now))
        #expect(h.sends.filter { $0.connection == 1 }.map(\.messageID).suffix(2).sorted() == onTwo.sorted())
        for id in onTwo { h.ack(id, on: 1) }
        for i in 0..<4 { #expect(h.finalEvents(for: "m-\(i)").count == 1) }
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.opened.count == 2)  // no replacement for the slot that left
    }

    @Test func aLeavingConnectionClosesOnlyAfterTheACKsItOwes() {
        var h = Harness(connections: 2, window: 2)
        h.startReady()
        h.accept("m-0")
        h.accept("m-1")
        #expect(h.inFlight(2) == 1)
        h.holdRecords = true
        h.receive(.upstream(.init(messageID: "u-1", from: "dev-1", category: "app", data: .object([:]), timeToLive: nil)), on: 2)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 1), now: h.now))
        h.ack("m-1", on: 2)
        // Nothing in flight, but the upstream message's hand-over is not recorded yet: its ACK goes out on
        // this connection first.
        #expect(h.closes.isEmpty)
        #expect(h.acks.isEmpty)
        h.holdRecords = false
        h.confirmRecords()
        #expect(h.acks.map(\.connection) == [2])
        #expect(h.closes == [2])
    }

    @Test func idleOrConnectingConnectionsCloseAtOnceAndARemovedSlotNeverReconnects() {
        var h = Harness(connections: 3)
        h.apply(h.dispatcher.start(now: 0))
        h.apply(h.dispatcher.connectionReady(1, now: 0))
        h.apply(h.dispatcher.connectionReady(2, now: 0))
        // Connection 3 fails to log in: its slot waits for the reconnect backoff.
        h.apply(h.dispatcher.connectionEnded(3, .lost(reason: "refused"), now: 0))
        let opened = h.opened.count
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 1), now: 0))
        #expect(h.closes == [2])  // ready, nothing in flight
        h.advance(to: 3600)
        #expect(h.opened.count == opened)  // slot 3's reconnect timer left with it
        #expect(h.dispatcher.sessions.keys.sorted() == [1, 2])
    }

    @Test func policySettingsApplyToTheNextDecision() {
        var h = Harness(connections: 1, maxAttempts: 5)
        h.startReady()
        h.accept("m-1")
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 1, maxAttempts: 1, window: 7), now: h.now))
        #expect(h.opened.count == 1 && h.closes.isEmpty)
        h.nack("m-1", "SERVICE_UNAVAILABLE", on: 1)
        #expect(h.finalEvents(for: "m-1").count == 1)  // one attempt allowed now: final at once
        // The window applies to connections opened from now on.
        #expect(h.dispatcher.sessions[1]?.window.capacity == 100)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 2, window: 7), now: h.now))
        #expect(h.dispatcher.sessions[2]?.window.capacity == 7)
    }

    @Test func beforeStartTheNewCountIsWhatStartOpens() {
        var h = Harness(connections: 1)
        h.apply(h.dispatcher.reconfigure(Self.configuration(h, connections: 2), now: 0))
        #expect(h.opened.isEmpty)
        h.startReady()
        #expect(h.opened.map(\.connection) == [1, 2])
        _ = secondary
    }
}

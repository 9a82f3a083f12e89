import Testing
@testable import CCS

private let primary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5235)
private let secondary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5236)

/// The reconnect rule alone (`ReconnectPolicy`), no dispatcher.
@Suite struct ReconnectPolicyTests {
    let policy = ReconnectPolicy(backoff: Backoff(base: 1, cap: 60), refusedBackoff: Backoff(base: 300, cap: 3600))

    @Test func healthyDropReconnectsAtOnceToTheSameEndpointAndClearsFailures() {
        var state = ReconnectPolicy.SlotState()
        state.failures = 4
        state.refusals = 1
        let decision = policy.next(after: .droppedAfter(seconds: 10), state: &state, u: 0)
        #expect(decision == .init(delay: 0, switchEndpoint: false))
        #expect(state == .init())
    }

    @Test func youngDeathsAndFailedLoginsBackOffExponentiallyAndSwitchEndpoints() {
        var state = ReconnectPolicy.SlotState()
        var delays: [Double] = []
        for ending in [ReconnectPolicy.Ending.droppedAfter(seconds: 0.01), .neverLoggedIn, .droppedAfter(seconds: 9.9),
                       .droppedAfter(seconds: 0), .droppedAfter(seconds: 5), .neverLoggedIn, .droppedAfter(seconds: 1)] {
            let decision = policy.next(after: ending, state: &state, u: 0)
            #expect(decision.switchEndpoint)
            delays.append(decision.delay)
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60])
        #expect(state.failures == 7)
    }

    @Test func failuresResetOnlyAfterAHealthyConnection() {
        var state = ReconnectPolicy.SlotState()
        _ = policy.next(after: .droppedAfter(seconds: 1), state: &state, u: 0)
        _ = policy.next(after: .droppedAfter(seconds: 1), state: &state, u: 0)
        #expect(policy.next(after: .droppedAfter(seconds: 1), state: &state, u: 0).delay == 4)
        #expect(policy.next(after: .droppedAfter(seconds: 30), state: &state, u: 0).delay == 0)
        #expect(policy.next(after: .droppedAfter(seconds: 1), state: &state, u: 0).delay == 1)
    }

    @Test func refusalsWaitTheLongBackoffWhateverTheConnectionsAge() {
        var state = ReconnectPolicy.SlotState()
        let first = policy.next(after: .refused, state: &state, u: -1)
        #expect(first == .init(delay: 240, switchEndpoint: true))
        #expect(policy.next(after: .refused, state: &state, u: 0).delay == 600)
        // A young death after refusals still counts both.
        #expect(policy.next(after: .droppedAfter(seconds: 0), state: &state, u: 0).delay == 4)
        #expect(state == .init(failures: 3, refusals: 2))
    }
}

private extension ReconnectPolicy.SlotState {
    init(failures: Int, refusals: Int) {
        self.init()
        self.failures = failures
        self.refusals = refusals
    }
}

/// The reconnect rule inside the dispatcher, on a fake clock: a server that ends every stream right after
/// login gets backed-off attempts (never a loop), and each message's resends stay bounded.
@Suite struct DispatcherReconnectTests {
    typealias Harness = DispatcherTests.Harness

    @Test func aConnectionThatDiesRightAfterLoginBacksOffAndAlternatesEndpoints() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        #expect(h.sends.count == 1)
        h.now = 0.2
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "stream error (conflict)"), now: h.now))
        #expect(h.opened.count == 1, "a connection that died 0.2 s after login reconnected at once")
        #expect(h.dispatcher.counters.failedConnections == 1)
        h.advance(to: 0.2 + 0.79)
        #expect(h.opened.count == 1)
        h.advance(to: 0.2 + 1.21)
        #expect(h.opened.map(\.endpoint) == [primary, secondary])
        // The second one dies young too: the wait doubles, and the endpoint flips back.
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        #expect(h.sends.map(\.messageID) == ["m-1", "m-1"])
        let died = h.now + 0.1
        h.apply(h.dispatcher.connectionEnded(2, .lost(reason: "transport failed: connection reset"), now: died))
        h.advance(to: died + 1.59)
        #expect(h.opened.count == 2)
        h.advance(to: died + 2.41)
        #expect(h.opened.map(\.endpoint) == [primary, secondary, primary])
        // Lost connections are not attempts, whatever their age: the message waits for its answer.
        #expect(h.dispatcher.record("m-1")?.attempts == 0)
    }

    @Test func theFirstDropAfterAHealthyConnectionReconnectsAtOnceAndClearsTheBackoff() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        // Three young deaths build up the backoff.
        var connection = 1
        for _ in 0..<3 {
            h.apply(h.dispatcher.connectionReady(connection, now: h.now))
            h.apply(h.dispatcher.connectionEnded(connection, .lost(reason: "reset"), now: h.now + 0.1))
            let opened = h.opened.count
            let limit = h.now + 100
            while h.opened.count == opened, h.now < limit { h.advance(to: h.now + 0.05) }
            connection = h.opened.last!.connection
        }
        #expect(h.dispatcher.counters.failedConnections == 3)
        // This one stays up 10 s: healthy. Its drop reconnects at once, same endpoint.
        let endpoint = h.opened.last!.endpoint
        h.apply(h.dispatcher.connectionReady(connection, now: h.now))
        h.now += 10
        h.apply(h.dispatcher.connectionEnded(connection, .lost(reason: "stream closed by server"), now: h.now))
        #expect(h.opened.last!.endpoint == endpoint)
        #expect(h.opened.last!.connection == connection + 1)
        #expect(h.dispatcher.counters.reconnects == 1)
        // The backoff starts over: the next young death waits about 1 s, not 8.
        connection += 1
        h.apply(h.dispatcher.connectionReady(connection, now: h.now))
        let died = h.now + 0.1
        h.apply(h.dispatcher.connectionEnded(connection, .lost(reason: "reset"), now: died))
        h.advance(to: died + 1.21)
        #expect(h.opened.last!.connection == connection + 1)
    }

    @Test func aRefusalThatRetryingCannotHealWaitsTheLongBackoff() {
        var h = Harness(refusedReconnectBackoff: Backoff(base: 300, cap: 3600))
        h.startReady()
        h.now = 3600  // even after an hour of health
        h.apply(h.dispatcher.connectionEnded(1, .refused(condition: "host-unknown", reason: "stream error (host-unknown)"), now: h.now))
        #expect(h.dispatcher.counters.refusedConnections == 1)
        guard case .connection(1, _, .closed, let reason)? = h.events.last else {
            Issue.record("expected the closed event, got \(String(describing: h.events.last))")
            return
        }
        #expect(reason == "stream error (host-unknown)")
        h.advance(to: 3600 + 239)
        #expect(h.opened.count == 1)
        h.advance(to: 3600 + 361)
        #expect(h.opened.map(\.endpoint) == [primary, secondary])
        // Refused again right after login: the wait doubles.
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        let refusedAt = h.now + 0.1
        h.apply(h.dispatcher.connectionEnded(2, .refused(condition: "not-authorized", reason: "stream error (not-authorized)"), now: refusedAt))
        h.advance(to: refusedAt + 479)
        #expect(h.opened.count == 2)
        h.advance(to: refusedAt + 721)
        #expect(h.opened.count == 3)
        // Not a configuration stop: the daemon goes on.
        #expect(h.stops.isEmpty)
    }

    /// A server that ends every stream 50 ms after login (or drains it, and closes it 50 ms later), for ten
    /// minutes: with the production defaults at most 6 attempts in any 30 s, and the message in flight goes
    /// out at most once per attempt.
    @Test(arguments: [false, true])
    func persistentDeathAfterLoginMakesAHandfulOfAttemptsPer30SecondsAndBoundedResends(drainFirst: Bool) {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        var opens: [Double] = [0]
        var handled = 0
        while h.now < 600 {
            if h.opened.count > handled {
                let id = h.opened[handled].connection
                handled += 1
                if handled > opens.count { opens.append(h.now) }
                h.apply(h.dispatcher.connectionReady(id, now: h.now))
                if drainFirst { h.receive(.control(controlType: "CONNECTION_DRAINING"), on: id) }
                h.now += 0.05
                h.apply(h.dispatcher.connectionEnded(id, .lost(reason: "stream closed by server"), now: h.now))
            }
            h.advance(to: h.now + 0.05)
        }
        for start in opens {
            let inWindow = opens.filter { $0 >= start && $0 < start + 30 }.count
            #expect(inWindow <= 6, "\(inWindow) attempts in the 30 s from \(start)")
        }
        #expect(opens.count < 30, "\(opens.count) attempts in 600 s")
        let sendsOfM1 = h.sends.filter { $0.messageID == "m-1" }.count
        #expect(sendsOfM1 <= opens.count)
        #expect(h.dispatcher.record("m-1")?.sends == sendsOfM1)
    }

    /// The first young drain in a row opens its replacement at once (CCS moves clients by draining); a second
    /// young drain in a row waits the backoff, so a server draining every login sees no storm.
    @Test func repeatedDrainsRightAfterLoginBackOff() {
        var h = Harness()
        h.startReady()
        h.receive(.control(controlType: .connectionDraining), on: 1)
        #expect(h.opened.map(\.endpoint) == [primary, secondary], "the first drain opens its replacement at once")
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        h.receive(.control(controlType: .connectionDraining), on: 2)
        #expect(h.opened.count == 2, "a second drain 0 s after login opened its replacement at once")
        h.advance(to: h.now + 1.59)
        #expect(h.opened.count == 2, "the backoff after a second young drain is at least 1.6 s")
        h.advance(to: h.now + 0.82)
        #expect(h.opened.map(\.endpoint) == [primary, secondary, primary])
        // A drain after a healthy connection opens the replacement at once and clears the failures.
        h.apply(h.dispatcher.connectionReady(3, now: h.now))
        h.now += 10
        h.receive(.control(controlType: .connectionDraining), on: 3)
        #expect(h.opened.map(\.endpoint) == [primary, secondary, primary, secondary])
    }

    /// With every jitter draw at its shortest (u = -1), a slot whose connections all die (or drain) 50 ms after
    /// login makes at most 6 attempts in any 30 s.
    @Test(arguments: [ReconnectPolicy.Ending.droppedAfter(seconds: 0.05), .drainedAfter(seconds: 0.05), .neverLoggedIn])
    func worstCaseJitterStillMakesAtMostSixAttemptsPer30Seconds(ending: ReconnectPolicy.Ending) {
        let policy = ReconnectPolicy(backoff: Backoff(base: 1, cap: 60), refusedBackoff: Backoff(base: 300, cap: 3600))
        var state = ReconnectPolicy.SlotState()
        var attempts: [Double] = [0]
        while attempts.last! < 300 {
            let decision = policy.next(after: ending, state: &state, u: -1)
            attempts.append(attempts.last! + 0.05 + decision.delay)
        }
        for start in attempts {
            let inWindow = attempts.filter { $0 >= start && $0 < start + 30 }.count
            #expect(inWindow <= 6, "\(inWindow) attempts in the 30 s from \(start)")
        }
    }

    @Test func drainPolicyAlone() {
        let policy = ReconnectPolicy(backoff: Backoff(base: 1, cap: 60), refusedBackoff: Backoff(base: 300, cap: 3600))
        var state = ReconnectPolicy.SlotState()
        #expect(policy.next(after: .drainedAfter(seconds: 1), state: &state, u: 0) == .init(delay: 0, switchEndpoint: true))
        #expect(policy.next(after: .drainedAfter(seconds: 1), state: &state, u: 0) == .init(delay: 2, switchEndpoint: true))
        #expect(policy.next(after: .drainedAfter(seconds: 1), state: &state, u: 0) == .init(delay: 4, switchEndpoint: true))
        #expect(policy.next(after: .drainedAfter(seconds: 10), state: &state, u: 0) == .init(delay: 0, switchEndpoint: true))
        #expect(state == ReconnectPolicy.SlotState())
    }
}

/// Errors about an ACK ccsd sent never resolve a downstream message, even one sharing the message_id.
@Suite struct DispatcherAckErrorTests {
    typealias Harness = DispatcherTests.Harness

    /// Downstream "m-1" in flight on connection 1, upstream "m-1" arrived there and was ACKed.
    static func collided() -> Harness {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.receive(.upstream(.init(messageID: "m-1", from: "device-1", data: .object([:]))), on: 1)
        #expect(h.acks.count == 1)
        #expect(h.inFlight(1) == 1)
        return h
    }

    static let ackJSON = #"{"to":"device-1","message_id":"m-1","message_type":"ack"}"#

    @Test func aStanzaErrorEchoingTheAckLeavesTheDownstreamInFlight() {
        var h = Self.collided()
        h.receive(.stanzaError(.init(id: CCSStanza.ackStanzaID(messageID: "m-1"), messageID: "m-1", condition: "bad-request",
                                     echoedMessageType: "ack")), on: 1)
        // Even a server that put the bare message_id into the id, or dropped the id, names an ACK by its echo.
        h.receive(.stanzaError(.init(id: "m-1", messageID: "m-1", condition: "bad-request", echoedMessageType: "ack")), on: 1)
        h.receive(.stanzaError(.init(id: nil, messageID: "m-1", condition: "bad-request", echoedMessageType: "ack")), on: 1)
        // And an ACK's id alone, without an echo.
        h.receive(.stanzaError(.init(id: CCSStanza.ackStanzaID(messageID: "m-1"), messageID: nil, condition: "bad-request")), on: 1)
        #expect(h.dispatcher.counters.ackErrors == 4)
        #expect(h.dispatcher.counters.unmatchedResolutions == 0)
        #expect(h.finalEvents(for: "m-1").isEmpty)
        #expect(h.inFlight(1) == 1)
        h.ack("m-1", on: 1)
        #expect(h.finalEvents(for: "m-1") == [.acked(messageID: "m-1", to: "token-a", canonicalRegistrationID: nil, group: nil)])
        #expect(h.dispatcher.counters.unmatchedResolutions == 0)
    }

    @Test func aBadAckNackLeavesTheDownstreamOfTheSameIDInFlight() {
        var h = Self.collided()
        h.receive(.nack(.init(messageID: "m-1", from: "device-1", error: "BAD_ACK", errorDescription: "Invalid ACK")), on: 1)
        #expect(h.dispatcher.counters.ackErrors == 1)
        #expect(h.finalEvents(for: "m-1").isEmpty)
        #expect(h.inFlight(1) == 1)
        #expect(!h.events.contains { if case .nacked = $0 { true } else { false } })
        h.ack("m-1", on: 1)
        #expect(h.finalEvents(for: "m-1").count == 1)
        #expect(h.dispatcher.counters.acked == 1)
    }

    @Test func aStanzaErrorResolvesOnlyADownstreamInFlightOnItsConnection() {
        var h = Harness(connections: 2)
        h.startReady()
        h.accept("m-1")
        let sentOn = h.sends[0].connection
        let other = sentOn == 1 ? 2 : 1
        h.receive(.stanzaError(.init(id: "m-1", messageID: "m-1", condition: "bad-request")), on: other)
        #expect(h.finalEvents(for: "m-1").isEmpty)
        #expect(h.dispatcher.counters.unmatchedResolutions == 1)
        // An echoed downstream payload (no message_type) without an id still resolves on its connection.
        h.receive(.stanzaError(.init(id: nil, messageID: "m-1", condition: "bad-request")), on: sentOn)
        #expect(h.finalEvents(for: "m-1") == [.nacked(messageID: "m-1", error: "bad-request", description: nil, final: true,
                                                     invalidToken: false, group: nil)])
    }

    @Test func ackStanzasCarryTheirOwnIDInTheAckSpace() throws {
        let text = CCSStanza.ack(to: "device-1", messageID: "m-1")
        #expect(text.hasPrefix(#"<message id="ccsd-ack:m-1"><gcm xmlns="google:mobile:data">"#))
        #expect(CCSStanza.downstream(messageID: "m-1", json: "{}").hasPrefix(#"<message id="m-1">"#))
    }
}

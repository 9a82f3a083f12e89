import Testing
@testable import CCS

private let primary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5235)
private let secondary = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5236)

/// Transcripts through the pool state machine (ccs-protocol.md §3–5), no sockets, no sleeps.
@Suite struct DispatcherTests {

    /// A harness that keeps the dispatcher, plays the store and remembers what it was asked for. By default
    /// the store answers at once: `.persist` with `persisted(.stored)` (and the `accepted` event), `.record`
    /// with `recorded(through:)`. With `holdPersists` / `holdRecords` the requests wait in `heldPersists` /
    /// `heldRecords` until `answerPersists` / `confirmRecords`, to test what waits for the store.
    struct Harness {
        var dispatcher: Dispatcher
        var now = 0.0
        /// Events as journaled: `accepted` once stored, the others once their record is confirmed.
        var events: [DispatcherEvent] = []
        var sends: [(connection: Int, messageID: String)] = []
        var acks: [(connection: Int, to: String, messageID: String)] = []
        /// Each ACK as the driver writes it on the wire (`CCSStanza.ack`).
        var ackStanzas: [String] = []
        var opened: [(connection: Int, endpoint: Endpoint)] = []
        var closes: [Int] = []
        var aborts: [Int] = []
        var stops: [String] = []
        var logs: [DispatcherLog] = []
        var progress: [MessageRecord] = []
        /// Every record request, confirmed or not, in order.
        var requests: [RecordRequest] = []
        /// The order of what crossed the store seam and the wire: `persist m`, `persisted m`, `record N event m`,
        /// `recorded N`, `send C m`, `ack C m`.
        var transcript: [String] = []
        var holdPersists = false
        var holdRecords = false
        var heldPersists: [(record: MessageRecord, line: Int?)] = []
        var heldRecords: [RecordRequest] = []

        init(connections: Int = 1, window: Int = 100, maxAttempts: Int = 5, endpoints: [Endpoint] = [primary, secondary],
             ackTimeout: Double = 60, reconnectBackoff: Backoff = Backoff(base: 1, cap: 60),
             refusedReconnectBackoff: Backoff = Backoff(base: 300, cap: 3600)) {
            dispatcher = Dispatcher(
                configuration: DispatcherConfiguration(
                    endpoints: endpoints, connections: connections, window: window, maxAttempts: maxAttempts,
                    reconnectBackoff: reconnectBackoff, ackTimeout: ackTimeout,
                    refusedReconnectBackoff: refusedReconnectBackoff, seed: 42))
        }

        mutating func apply(_ actions: [DispatcherAction]) {
            var stored: [PersistResult] = []
            var through: UInt64?
            for action in actions {
                switch action {
                case .open(let c, let e): opened.append((c, e))
                case .send(let c, let r):
                    sends.append((c, r.messageID))
                    transcript.append("send \(c) \(r.messageID)")
                case .ack(let c, let to, let id):
                    acks.append((c, to, "\(id)"))
                    ackStanzas.append(CCSStanza.ack(to: to, messageID: id))
                    transcript.append("ack \(c) \(id)")
                case .close(let c): closes.append(c)
                case .abort(let c, _): aborts.append(c)
                case .stop(let reason): stops.append(reason)
                case .log(let log): logs.append(log)
                case .saveProgress(let record): progress.append(record)
                case .persist(let record, let line):
                    transcript.append("persist \(record.messageID)")
                    if holdPersists {
                        heldPersists.append((record, line))
                    } else {
                        stored.append(PersistResult(messageID: record.messageID, line: line, outcome: .stored))
                    }
                case .record(let request):
                    transcript.append("record \(request.id) \(Self.describe(request.event))")
                    requests.append(request)
                    heldRecords.append(request)
                    if !holdRecords { through = request.id }
                }
            }
            if !stored.isEmpty { answer(stored) }
            if let through { confirmRecords(through: through) }
        }

        /// The store answers persist requests (`accepted` is journaled for the stored ones).
        mutating func answer(_ results: [PersistResult]) {
            for result in results {
                transcript.append("persisted \(result.messageID)")
                if result.outcome == .stored { events.append(.accepted(messageID: result.messageID)) }
            }
            apply(dispatcher.persisted(results, now: now))
        }

        /// Answers every held persist request with `outcome`.
        mutating func answerPersists(_ outcome: PersistOutcome = .stored) {
            let held = heldPersists
            heldPersists.removeAll()
            answer(held.map { PersistResult(messageID: $0.record.messageID, line: $0.line, outcome: outcome) })
        }

        /// The store committed every record up to `through` (default: all held ones).
        mutating func confirmRecords(through: UInt64? = nil) {
            guard let through = through ?? heldRecords.last?.id else { return }
            let confirmed = heldRecords.prefix { $0.id <= through }
            heldRecords.removeFirst(confirmed.count)
            events += confirmed.map(\.event)
            transcript.append("recorded \(through)")
            apply(dispatcher.recorded(through: through, now: now))
        }

        static func describe(_ event: DispatcherEvent) -> String {
            switch event {
            case .accepted(let id): "accepted \(id)"
            case .rejected(let id, _, _, _, let retryable, _): "rejected \(id ?? "-")\(retryable ? " retryable" : "")"
            case .acked(let id, _, _, _): "acked \(id)"
            case .nacked(let id, let error, _, let final, _, _): "nacked \(id) \(error)\(final ? " final" : "")"
            case .expired(let id): "expired \(id)"
            case .upstream(let upstream): "upstream \(upstream.messageID)"
            case .receipt(let receipt): "receipt \(receipt.messageID)"
            case .connection(let id, _, let state, _): "connection \(id) \(state.rawValue)"
            }
        }

        /// Starts the pool and brings every opened connection up.
        mutating func startReady() {
            apply(dispatcher.start(now: now))
            for (id, _) in opened { apply(dispatcher.connectionReady(id, now: now)) }
        }

        static func record(_ id: String, to: String = "token-a", ttl: Int = 2_419_200, at now: Double) -> MessageRecord {
            MessageRecord(messageID: id, json: "{\"to\":\"\(to)\",\"message_id\":\"\(id)\"}", to: to, rateKey: to,
                          acceptedAt: now, acceptedAtUnixMillis: 1_790_000_000_000 + Int64(now * 1000), timeToLive: ttl)
        }

        mutating func accept(_ id: String, to: String = "token-a", ttl: Int = 2_419_200, line: Int? = nil) {
            apply(dispatcher.submit([(Self.record(id, to: to, ttl: ttl, at: now), line)], now: now))
        }

        mutating func receive(_ message: InboundMessage, on connection: Int) {
            apply(dispatcher.received(message, on: connection, now: now))
        }

        mutating func ack(_ id: String, on connection: Int) {
            receive(.ack(.init(messageID: id, from: "token-a")), on: connection)
        }

        mutating func nack(_ id: String, _ error: String, on connection: Int) {
            receive(.nack(.init(messageID: id, from: "token-a", error: CCSErrorCode(rawValue: error))), on: connection)
        }

        mutating func advance(to time: Double) {
            now = time
            apply(dispatcher.tick(now: now))
        }

        func inFlight(_ connection: Int) -> Int { dispatcher.sessions[connection]?.window.inFlight ?? 0 }

        func finalEvents(for id: String) -> [DispatcherEvent] {
            events.filter { event in
                guard event.isFinal else { return false }
                switch event {
                case .acked(let m, _, _, _), .expired(let m), .nacked(let m, _, _, _, _, _): return m == id
                default: return false
                }
            }
        }
    }

    // MARK: Flow control

    @Test func neverMoreThanWindowUnackedPerConnection() {
        var h = Harness()
        h.startReady()
        for i in 0..<250 { h.accept("m-\(i)") }
        #expect(h.sends.count == 100)
        #expect(h.inFlight(1) == 100)
        h.ack("m-0", on: 1)
        #expect(h.sends.count == 101)
        #expect(h.sends.last?.messageID == "m-100")
        #expect(h.inFlight(1) == 100)
    }

    @Test func configuredSmallerWindowIsKept() {
        var h = Harness(window: 3)
        h.startReady()
        for i in 0..<10 { h.accept("m-\(i)") }
        #expect(h.sends.count == 3)
    }

    @Test func nothingIsSentBeforeLogin() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        #expect(h.sends.isEmpty)
        h.apply(h.dispatcher.connectionReady(1, now: 0))
        #expect(h.sends.map(\.messageID) == ["m-1"])
    }

    @Test func eachMessageGoesToTheConnectionWithMostFreeWindow() {
        var h = Harness(connections: 2, window: 4)
        h.startReady()
        for i in 0..<6 { h.accept("m-\(i)") }
        #expect(h.inFlight(1) == 3)
        #expect(h.inFlight(2) == 3)
        h.ack("m-0", on: 1)
        h.ack("m-2", on: 1)
        h.accept("m-6")
        // Connection 1 has 3 free, connection 2 has 1.
        #expect(h.sends.last! == (1, "m-6"))
    }

    @Test func upstreamAcksBypassAFullWindow() {
        var h = Harness(window: 1)
        h.startReady()
        h.accept("m-1")
        h.accept("m-2")
        #expect(h.inFlight(1) == 1)
        h.receive(.upstream(.init(messageID: "u-1", from: "dev-1", category: "app", data: .object([:]), timeToLive: nil)), on: 1)
        #expect(h.acks.count == 1)
        #expect(h.acks[0] == (1, "dev-1", "u-1"))
        #expect(h.inFlight(1) == 1)
    }

    // MARK: Outcomes

    @Test func ackIsFinalWithCanonicalToken() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.receive(.ack(.init(messageID: "m-1", from: "token-a", canonicalRegistrationID: "token-new")), on: 1)
        #expect(h.events.last == .acked(messageID: "m-1", to: "token-a", canonicalRegistrationID: "token-new", group: nil))
        #expect(h.dispatcher.outstanding == 0)
    }

    @Test func unmatchedAckIsCountedAndIgnored() {
        var h = Harness()
        h.startReady()
        let before = h.events.count
        h.ack("nobody", on: 1)
        #expect(h.events.count == before)
        #expect(h.dispatcher.counters.unmatchedResolutions == 1)
    }

    @Test(arguments: ["BAD_REGISTRATION", "DEVICE_UNREGISTERED", "SENDER_ID_MISMATCH"])
    func badTokenNacksAreFinalAndMarkTheToken(code: String) {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.nack("m-1", code, on: 1)
        #expect(h.events.last == .nacked(messageID: "m-1", error: code, description: nil, final: true, invalidToken: true, group: nil))
        #expect(h.dispatcher.outstanding == 0)
    }

    @Test(arguments: ["INVALID_JSON", "INVALID_APNS_CREDENTIAL", "AUTHENTICATION_FAILED"])
    func permanentNacksAreFinal(code: String) {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.nack("m-1", code, on: 1)
        #expect(h.events.last == .nacked(messageID: "m-1", error: code, description: nil, final: true, invalidToken: false, group: nil))
    }

    @Test(arguments: ["SERVICE_UNAVAILABLE", "INTERNAL_SERVER_ERROR", "SOMETHING_NEW"])
    func transientNacksRetryWithBackoffWithoutStallingOthers(code: String) {
        var h = Harness(window: 2)
        h.startReady()
        h.accept("m-1")
        h.accept("m-2")
        h.accept("m-3")
        h.nack("m-1", code, on: 1)
        #expect(h.events.last == .nacked(messageID: "m-1", error: code, description: nil, final: false, invalidToken: false, group: nil))
        // m-3 takes the freed slot at once; m-1 waits for its backoff (0.8–1.2 s for attempt 1).
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2", "m-3"])
        h.ack("m-2", on: 1)
        h.advance(to: 0.79)
        #expect(h.sends.count == 3)
        h.advance(to: 1.21)
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2", "m-3", "m-1"])
    }

    /// A message whose backoff is over goes before messages accepted after it: it waited already, and its
    /// time_to_live is running. (It used to queue behind the whole backlog of new messages.)
    @Test func aRetryGoesBeforeNewerQueuedMessages() {
        var h = Harness(window: 1)
        h.startReady()
        h.accept("m-1")
        h.nack("m-1", "SERVICE_UNAVAILABLE", on: 1)
        for n in 2...5 { h.accept("m-\(n)") }
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2"])
        h.advance(to: 1.21)
        h.ack("m-2", on: 1)
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2", "m-1"])
    }

    @Test func attemptsRunOutIntoAFinalNack() {
        var h = Harness(maxAttempts: 3)
        h.startReady()
        h.accept("m-1")
        for round in 1...3 {
            h.nack("m-1", "SERVICE_UNAVAILABLE", on: 1)
            h.advance(to: h.now + 100)
            #expect(h.sends.count == (round < 3 ? round + 1 : 3))
        }
        guard case .nacked(_, let error, let description, true, false, nil)? = h.events.last else {
            Issue.record("expected a final nack, got \(String(describing: h.events.last))")
            return
        }
        #expect(error == "SERVICE_UNAVAILABLE")
        #expect(description?.contains("3 attempts") == true)
        #expect(h.finalEvents(for: "m-1").count == 1)
    }

    @Test func rateExceededHoldsBackOnlyThatToken() {
        var h = Harness()
        h.startReady()
        h.accept("a-1", to: "token-a")
        h.nack("a-1", "DEVICE_MESSAGE_RATE_EXCEEDED", on: 1)
        h.accept("a-2", to: "token-a")
        h.accept("b-1", to: "token-b")
        #expect(h.sends.map(\.messageID) == ["a-1", "b-1"])
        h.advance(to: 1.5)
        #expect(h.sends.map(\.messageID) == ["a-1", "b-1", "a-1", "a-2"])
    }

    @Test func topicRateExceededHoldsBackOnlyThatTopic() {
        var h = Harness()
        h.startReady()
        h.accept("t-1", to: "/topics/news")
        h.receive(.nack(.init(messageID: "t-1", from: "/topics/news", error: "TOPICS_MESSAGE_RATE_EXCEEDED")), on: 1)
        h.accept("t-2", to: "/topics/news")
        h.accept("s-1", to: "/topics/sport")
        #expect(h.sends.map(\.messageID) == ["t-1", "s-1"])
        h.advance(to: 2)
        #expect(Set(h.sends.suffix(2).map(\.messageID)) == ["t-1", "t-2"])
    }

    @Test func stanzaErrorIsFinalByIDAttribute() {
        var h = Harness()
        h.startReady()
        h.accept("m-7")
        h.receive(.stanzaError(.init(id: "m-7", messageID: nil, condition: "bad-request", code: "400", text: "InvalidJson")), on: 1)
        #expect(h.events.last == .nacked(messageID: "m-7", error: "bad-request", description: "InvalidJson", final: true, invalidToken: false, group: nil))
    }

    @Test func deviceGroupAckListsFailures() {
        var h = Harness()
        h.startReady()
        h.accept("g-1", to: "group-key")
        h.receive(.ack(.init(messageID: "g-1", from: "group-key", success: 1, failure: 2, failedRegistrationIDs: ["t1", "t2"])), on: 1)
        #expect(h.events.last == .acked(messageID: "g-1", to: "group-key", canonicalRegistrationID: nil,
                                       group: GroupOutcome(success: 1, failure: 2, failedRegistrationIDs: ["t1", "t2"])))
    }

    @Test func deviceGroupNackWhereAllFailedIsFinal() {
        var h = Harness()
        h.startReady()
        h.accept("g-2", to: "group-key")
        h.receive(.nack(.init(messageID: "g-2", from: "group-key", error: "SERVICE_UNAVAILABLE", success: 0, failure: 2, failedRegistrationIDs: ["t1", "t2"])), on: 1)
        guard case .nacked(_, _, _, true, _, let group)? = h.events.last else {
            Issue.record("expected final nack")
            return
        }
        #expect(group?.failedRegistrationIDs == .array([.string("t1"), .string("t2")]))
    }

    @Test func duplicateOutstandingMessageIDIsRejected() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.accept("m-1")
        #expect(h.events.last == .rejected(messageID: "m-1", field: "message_id",
                                          error: "message_id: must be unique among outstanding messages (got a duplicate)", line: nil))
        #expect(h.sends.count == 1)
    }

    // MARK: Expiry

    @Test func messageWaitingPastItsTTLExpiresWithoutBeingSent() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))  // never logs in
        h.accept("m-1", ttl: 5)
        h.advance(to: 4.9)
        #expect(h.events.last == .accepted(messageID: "m-1"))
        h.advance(to: 5)
        #expect(h.events.last == .expired(messageID: "m-1"))
        h.apply(h.dispatcher.connectionReady(1, now: 6))
        #expect(h.sends.isEmpty)
    }

    @Test func zeroTTLGetsOneTryAndIsNeverResent() {
        var h = Harness()
        h.startReady()
        h.accept("now-or-never", ttl: 0)
        #expect(h.sends.count == 1)
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: 0.1))
        #expect(h.finalEvents(for: "now-or-never") == [.expired(messageID: "now-or-never")])
    }

    @Test func retryThatWouldOutliveTTLExpires() {
        var h = Harness()
        h.startReady()
        h.accept("m-1", ttl: 3)
        h.nack("m-1", "SERVICE_UNAVAILABLE", on: 1)
        h.advance(to: 3)
        #expect(h.finalEvents(for: "m-1") == [.expired(messageID: "m-1")])
        #expect(h.sends.count == 1)
    }

    // MARK: Upstream and receipts

    @Test func upstreamIsHandedOverThenAckedAndDuplicatesOnlyAcked() {
        var h = Harness()
        h.startReady()
        let upstream = InboundMessage.Upstream(messageID: "u-1", from: "dev", category: "com.example", data: .object(["k": .string("v")]), timeToLive: nil)
        h.receive(.upstream(upstream), on: 1)
        #expect(h.events.last == .upstream(upstream))
        h.receive(.upstream(upstream), on: 1)
        #expect(h.events.filter { if case .upstream = $0 { true } else { false } }.count == 1)
        #expect(h.acks.count == 2)
        #expect(h.dispatcher.counters.upstreamDuplicates == 1)
    }

    @Test func receiptIsAckedToItsFromWithFullDr2ID() {
        var h = Harness()
        h.startReady()
        h.receive(.receipt(.init(messageID: "dr2:m-1", from: "gcm.googleapis.com", originalMessageID: "m-1",
                                 status: "MESSAGE_SENT_TO_DEVICE", deviceRegistrationID: "tok", category: nil)), on: 1)
        #expect(h.acks.count == 1)
        #expect(h.acks[0] == (1, "gcm.googleapis.com", "dr2:m-1"))
    }

    @Test func unknownMessageAndControlTypesAreCountedNotFatal() {
        var h = Harness()
        h.startReady()
        h.receive(.unknown(messageType: "shiny", messageID: nil), on: 1)
        h.receive(.control(controlType: "SOMETHING_ELSE"), on: 1)
        #expect(h.dispatcher.counters.unknownMessageTypes == 1)
        #expect(h.dispatcher.counters.unknownControlTypes == 1)
        #expect(h.closes.isEmpty)
        #expect(h.dispatcher.sessions[1]?.phase == .ready)
    }

    // MARK: Draining

    @Test func drainStopsSendsOpensReplacementOnOtherEndpointAndResendsOnClose() {
        var h = Harness(window: 10)
        h.startReady()
        h.advance(to: 10)  // a healthy connection: its replacement opens at once
        for i in 0..<5 { h.accept("m-\(i)") }
        h.receive(.control(controlType: .connectionDraining), on: 1)
        #expect(h.dispatcher.sessions[1]?.phase == .draining)
        #expect(h.opened.last! == (2, secondary))
        // New messages wait for the replacement; the draining connection takes none.
        h.accept("m-5")
        #expect(h.sends.count == 5)
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        #expect(h.sends.last! == (2, "m-5"))
        // Acks still resolve on the draining connection.
        h.ack("m-0", on: 1)
        #expect(h.finalEvents(for: "m-0").count == 1)
        // The server closes it: what is still pending there is resent on the replacement, same ids.
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "server closed"), now: h.now))
        #expect(Array(h.sends.suffix(4).map(\.connection)) == [2, 2, 2, 2])
        #expect(Set(h.sends.suffix(4).map(\.messageID)) == ["m-1", "m-2", "m-3", "m-4"])
        // No reconnect for the drained connection: its slot already has the replacement.
        #expect(h.opened.count == 2)
        // Drains and resends are not attempts.
        #expect(h.dispatcher.record("m-1")?.attempts == 0)
    }

    @Test func drainingConnectionTheServerNeverClosesIsClosedAfterTheDrainTimeout() {
        var h = Harness()
        h.startReady()
        h.receive(.control(controlType: .connectionDraining), on: 1)
        h.advance(to: 299)
        #expect(h.closes.isEmpty)
        h.advance(to: 300)
        #expect(h.closes == [1])
    }

    @Test func drainOfSecondaryGoesBackToPrimary() {
        var h = Harness()
        h.startReady()
        h.advance(to: 10)
        h.receive(.control(controlType: .connectionDraining), on: 1)
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        h.advance(to: 20)
        h.receive(.control(controlType: .connectionDraining), on: 2)
        #expect(h.opened.map(\.endpoint) == [primary, secondary, primary])
    }

    @Test func drainingNackResendsAtOnceElsewhereAndIsNotAnAttempt() {
        var h = Harness(connections: 2)
        h.startReady()
        h.accept("m-1")
        let first = h.sends[0].connection
        h.nack("m-1", "CONNECTION_DRAINING", on: first)
        #expect(h.dispatcher.sessions[first]?.phase == .draining)
        let other = first == 1 ? 2 : 1
        #expect(h.sends.last! == (other, "m-1"))
        #expect(h.dispatcher.record("m-1")?.attempts == 0)
        #expect(!h.events.contains { if case .nacked = $0 { true } else { false } })
    }

    @Test func drainingWithOneEndpointReopensTheSame() {
        var h = Harness(endpoints: [primary])
        h.startReady()
        h.advance(to: 10)
        h.receive(.control(controlType: .connectionDraining), on: 1)
        #expect(h.opened.map(\.endpoint) == [primary, primary])
    }

    // MARK: Lost connections and reconnects

    @Test func connectionKilledWithFullWindowResendsAllOnReconnect() {
        var h = Harness()
        h.startReady()
        for i in 0..<100 { h.accept("m-\(i)") }
        #expect(h.inFlight(1) == 100)
        h.now = 10
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "connection reset"), now: h.now))
        // Reconnect at once after a drop that followed a healthy connection (10 s logged in).
        #expect(h.opened.count == 2)
        #expect(h.opened.last?.endpoint == primary)
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        #expect(h.sends.count == 200)
        #expect(Set(h.sends.suffix(100).map(\.messageID)) == Set((0..<100).map { "m-\($0)" }))
        for i in 0..<100 { h.ack("m-\(i)", on: 2) }
        #expect(h.dispatcher.outstanding == 0)
        for i in 0..<100 { #expect(h.finalEvents(for: "m-\(i)").count == 1) }
    }

    @Test func failedConnectBacksOffAndAlternatesEndpoints() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "connection refused"), now: 0))
        #expect(h.opened.count == 1)  // no immediate retry
        h.advance(to: 0.5)
        #expect(h.opened.count == 1)
        h.advance(to: 1.3)
        #expect(h.opened.count == 2)
        #expect(h.opened[1].endpoint == secondary)
        h.apply(h.dispatcher.connectionEnded(2, .lost(reason: "connection refused"), now: 1.3))
        h.advance(to: 2.9)
        #expect(h.opened.count == 2)  // second failure waits 1.6–2.4 s
        h.advance(to: 3.8)
        #expect(h.opened.count == 3)
    }

    @Test func authenticationFailureStopsWithoutRetryAndFinishesEveryMessage() {
        var h = Harness()
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        h.accept("m-2")
        h.apply(h.dispatcher.connectionEnded(1, .authenticationFailed(reason: "not-authorized"), now: 0))
        #expect(h.stops == ["not-authorized"])
        h.advance(to: 1000)
        #expect(h.opened.count == 1)
        #expect(h.finalEvents(for: "m-1").count == 1)
        #expect(h.finalEvents(for: "m-2").count == 1)
        h.accept("m-3")
        guard case .rejected? = h.events.last else { Issue.record("expected rejected"); return }
    }

    /// A message on the wire when its time_to_live runs out waits for CCS's answer: CCS may accept it.
    @Test func inFlightMessagePastItsTTLWaitsForItsAnswer() {
        var h = Harness(window: 1)
        h.startReady()
        h.accept("m-1", ttl: 1)
        h.advance(to: 1.5)
        #expect(h.finalEvents(for: "m-1").isEmpty)
        // Its id is still taken: a new m-1 would be resolved by the old copy's ack.
        h.accept("m-1", ttl: 600)
        guard case .rejected(_, "message_id", _, _, false, nil)? = h.events.last else {
            Issue.record("expected a rejection, got \(String(describing: h.events.last))")
            return
        }
        h.ack("m-1", on: 1)
        #expect(h.finalEvents(for: "m-1") == [.acked(messageID: "m-1", to: "token-a", canonicalRegistrationID: nil, group: nil)])
        #expect(h.sends.count == 1)
    }

    /// If its connection ends instead, it is past its time_to_live: expired, never resent.
    @Test func inFlightMessagePastItsTTLIsNotResentWhenItsConnectionEnds() {
        var h = Harness()
        h.startReady()
        h.accept("m-1", ttl: 1)
        h.advance(to: 1.5)
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: 1.5))
        h.apply(h.dispatcher.connectionReady(2, now: 1.6))
        #expect(h.finalEvents(for: "m-1") == [.expired(messageID: "m-1")])
        #expect(h.sends.count == 1)
    }

    /// Rate-limit memory per token goes away with the token's last outstanding message.
    @Test func rateLimitStrikesAreForgottenWhenNothingIsOutstandingForTheKey() {
        var h = Harness(window: 100)
        h.startReady()
        for i in 0..<500 {
            h.accept("m-\(i)", to: "rate-token-\(i)", ttl: 2)
            h.receive(.nack(.init(messageID: "m-\(i)", from: "rate-token-\(i)", error: "DEVICE_MESSAGE_RATE_EXCEEDED")), on: 1)
        }
        h.advance(to: 10)  // every message expires while its key is blocked
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.dispatcher.rateKeysTracked == 0)
    }

    /// A key's strikes last while any message to it is outstanding, also one sent before the first strike:
    /// the next strike backs off longer.
    @Test func rateLimitStrikesLastWhileAnEarlierMessageToTheKeyIsOutstanding() {
        var h = Harness()
        h.startReady()
        h.accept("a-1", to: "token-a")
        h.accept("a-2", to: "token-a")
        #expect(h.sends.map(\.messageID) == ["a-1", "a-2"])
        h.nack("a-1", "DEVICE_MESSAGE_RATE_EXCEEDED", on: 1)  // strike 1: about 1 s
        h.nack("a-2", "INVALID_JSON", on: 1)  // final; a-1 is still outstanding, so the strike stays
        h.advance(to: 1.5)
        #expect(h.sends.map(\.messageID) == ["a-1", "a-2", "a-1"])
        h.nack("a-1", "DEVICE_MESSAGE_RATE_EXCEEDED", on: 1)  // strike 2: about 2 s, not 1 s
        h.advance(to: 2.9)
        #expect(h.sends.count == 3)
        h.advance(to: 4)
        #expect(h.sends.map(\.messageID) == ["a-1", "a-2", "a-1", "a-1"])
    }

    @Test func ackTimeoutEndsAnInFlightMessagePastItsTTLAsExpired() {
        var h = Harness(ackTimeout: 30)
        h.startReady()
        h.accept("m-1", ttl: 5)
        h.advance(to: 30)
        #expect(h.aborts == [1])
        #expect(h.finalEvents(for: "m-1") == [.expired(messageID: "m-1")])
        #expect(h.sends.count == 1)
    }

    @Test func connectionWithoutAnAckWithinTheTimeoutIsDroppedAndItsMessagesResent() {
        var h = Harness(connections: 2, window: 10, ackTimeout: 30)
        h.startReady()
        h.accept("m-1")
        let first = h.sends[0].connection
        h.advance(to: 29.9)
        #expect(h.aborts.isEmpty)
        h.advance(to: 30)
        #expect(h.aborts == [first])
        #expect(h.dispatcher.counters.ackTimeouts == 1)
        // Resent on the other connection at once, same id, not an attempt; the slot reconnects.
        #expect(h.sends.last! == (first == 1 ? 2 : 1, "m-1"))
        #expect(h.dispatcher.record("m-1")?.attempts == 0)
        #expect(h.opened.count == 3)
        // An ack that arrived in time would have cancelled it.
        h.ack("m-1", on: first == 1 ? 2 : 1)
        h.advance(to: 100)
        #expect(h.aborts == [first])
    }

    @Test func shutdownClosesAllAndDoesNotReconnect() {
        var h = Harness(connections: 2)
        h.startReady()
        h.apply(h.dispatcher.shutdown())
        #expect(h.closes.sorted() == [1, 2])
        h.apply(h.dispatcher.connectionEnded(1, .closedLocally, now: 0))
        #expect(h.opened.count == 2)
    }

    @Test func nothingIsSentOnClosingStreamsAndLateLoginsAreClosed() {
        var h = Harness(connections: 2)
        h.apply(h.dispatcher.start(now: 0))
        h.apply(h.dispatcher.connectionReady(1, now: 0))
        h.accept("m-1")
        h.apply(h.dispatcher.shutdown())
        h.receive(.ack(.init(messageID: "m-1")), on: 1)
        h.accept("m-2")
        #expect(h.sends.map(\.messageID) == ["m-1"])
        h.apply(h.dispatcher.connectionReady(2, now: 0))
        #expect(h.closes.filter { $0 == 2 }.count == 2)
        #expect(h.sends.count == 1)
    }
}

@Suite struct DispatcherMemoryTests {
    /// Acked messages must not leave their time_to_live timers behind for weeks.
    @Test func timersOfFinishedMessagesDoNotAccumulate() {
        var dispatcher = Dispatcher(configuration: DispatcherConfiguration(endpoints: [primary], seed: 1))
        _ = dispatcher.start(now: 0)
        _ = dispatcher.connectionReady(1, now: 0)
        for i in 0..<50_000 {
            let id = "m-\(i)"
            _ = dispatcher.acceptAnswered(DispatcherTests.Harness.record(id, at: 0), now: 0)
            _ = dispatcher.answering(dispatcher.received(.ack(.init(messageID: id)), on: 1, now: 0), now: 0)
        }
        #expect(dispatcher.outstanding == 0)
        #expect(dispatcher.timerCount <= 4097)
    }

    /// With many messages live (2,000: 100 in flight, the rest queued), the heap holds at most twice what
    /// can be live (an expiry per live message, an ack timeout per message in flight) while messages keep
    /// coming and going: the heap's array stays at its largest size, so this bounds its memory.
    @Test func timersStayWithinTwiceTheLiveOnesWhileMessagesComeAndGo() {
        var dispatcher = Dispatcher(configuration: DispatcherConfiguration(endpoints: [primary], seed: 1))
        _ = dispatcher.start(now: 0)
        _ = dispatcher.connectionReady(1, now: 0)
        for i in 0..<2_000 {
            _ = dispatcher.acceptAnswered(DispatcherTests.Harness.record("m-\(i)", at: 0), now: 0)
        }
        var most = dispatcher.timerCount
        for i in 0..<20_000 {
            _ = dispatcher.acceptAnswered(DispatcherTests.Harness.record("m-\(2_000 + i)", at: 0), now: 0)
            _ = dispatcher.answering(dispatcher.received(.ack(.init(messageID: "m-\(i)")), on: 1, now: 0), now: 0)
            most = max(most, dispatcher.timerCount)
        }
        #expect(dispatcher.outstanding == 2_000)
        #expect(most > 4_096)  // past the floor, so the ratio is what bounds it
        // Checked after each batch's commit: one more message live then, and a send or two scheduled since.
        #expect(most <= 2 * (2_001 + 100) + 2)
    }
}

@Suite struct DispatcherGracefulStopTests {
    @Test func closedIntakeRejectsNewMessagesRetryableAndKeepsOutstandingOnes() {
        var h = DispatcherTests.Harness()
        h.startReady()
        h.accept("a", ttl: 60)
        h.dispatcher.closeIntake()
        h.accept("b", ttl: 60, line: 7)
        #expect(h.events.last == .rejected(messageID: "b", field: "", error: "ccsd is shutting down; the message was not accepted",
                                          line: 7, retryable: true))
        #expect(h.dispatcher.outstanding == 1)
        h.ack("a", on: 1)
        #expect(h.finalEvents(for: "a") == [.acked(messageID: "a", to: "token-a", canonicalRegistrationID: nil, group: nil)])
    }

    @Test func abandonedMessagesEndOnceAsShutdownSayingWhetherTheyWereSent() {
        var h = DispatcherTests.Harness(window: 1)
        h.startReady()
        h.accept("sent", ttl: 60)
        h.accept("queued", ttl: 60)
        let before = h.events.count
        h.apply(h.dispatcher.abandonOutstanding())
        let abandoned = h.events[before...]
        #expect(abandoned.count == 2)
        for case .nacked(let id, let error, let description, let final, _, _) in abandoned {
            #expect(error == "SHUTDOWN")
            #expect(final)
            #expect(description?.contains(id == "sent" ? "may or may not" : "not delivered") == true)
        }
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.dispatcher.abandonOutstanding().isEmpty)
        // A late ack for the abandoned message changes nothing.
        h.ack("sent", on: 1)
        #expect(h.events.count == before + 2)
    }

    /// A durable stop: intake closed without sending what is queued; messages in flight get their answers,
    /// then the pool is quiescent and the rest stays (stored) for the restart. No SHUTDOWN nacks.
    @Test func aDurableStopSendsNothingMoreAndBecomesQuiescentOnceTheWireIsAnswered() {
        var h = DispatcherTests.Harness(window: 2)
        h.startReady()
        for id in ["m-1", "m-2", "m-3"] { h.accept(id) }
        h.dispatcher.closeIntake(sendingQueued: false)
        #expect(h.dispatcher.state == .intakeClosed(sendingQueued: false))
        #expect(!h.dispatcher.isQuiescent)
        h.ack("m-1", on: 1)
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2"], "m-3 went on the wire after intake closed")
        #expect(!h.dispatcher.isQuiescent)
        h.holdRecords = true
        h.ack("m-2", on: 1)
        #expect(!h.dispatcher.isQuiescent, "quiescent before the final event was recorded")
        h.confirmRecords()
        #expect(h.dispatcher.isQuiescent)
        #expect(h.dispatcher.pending == 1)
        // A line submitted while stopping is rejected; its record releases nothing, so waiting for its commit
        // would let a producer that keeps writing hold the stop for the whole grace.
        h.holdRecords = true
        h.accept("late")
        #expect(h.dispatcher.unrecorded == 1)
        #expect(h.dispatcher.isQuiescent, "a rejection's unconfirmed record held the stop")
        h.confirmRecords()
        h.apply(h.dispatcher.shutdown())
        #expect(h.closes == [1])
        #expect(!h.events.contains { if case .nacked = $0 { true } else { false } })
        #expect(h.dispatcher.record("m-3") != nil)
    }
}

@Suite struct DispatcherAckTimeoutTests {
    /// After ccsd itself stalled, acks arrive late but arrive: a connection that is resolving messages is not
    /// dropped for the wait ccsd caused.
    @Test func aConnectionStillResolvingOthersGetsMoreTime() {
        var h = DispatcherTests.Harness(window: 10, ackTimeout: 30)
        h.startReady()
        h.accept("m-1")
        h.accept("m-2")
        h.advance(to: 29)
        h.ack("m-2", on: 1)  // resolved at 29: the connection is alive
        h.advance(to: 30)
        #expect(h.aborts.isEmpty)
        h.ack("m-1", on: 1)
        h.advance(to: 200)
        #expect(h.aborts.isEmpty)
    }

    /// One message ignored forever while others are acked still ends the connection, after four timeouts.
    @Test func oneMessageIgnoredForeverStillEndsTheConnection() {
        var h = DispatcherTests.Harness(window: 10, ackTimeout: 30)
        h.startReady()
        h.accept("ignored")
        for i in 0..<12 {
            h.advance(to: Double(i) * 10 + 5)
            h.accept("m-\(i)")
            h.ack("m-\(i)", on: 1)
        }
        #expect(h.aborts.isEmpty)
        h.advance(to: 120)
        #expect(h.aborts == [1])
    }
}

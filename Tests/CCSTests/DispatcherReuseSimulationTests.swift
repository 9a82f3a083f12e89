import Testing
@testable import CCS

/// Random schedules through the dispatcher where message_ids come from a small pool, so that slots of the live
/// table are reused by the same and by other message_ids while handles to their earlier messages still sit in
/// queues, timers and pending releases; and where acks, nacks and stanza errors also arrive late, twice, or on
/// the wrong connection. Checked on every step: no connection above its window, nothing sent that is not
/// accepted and not final, a `time_to_live: 0` message on the wire at most once, every accepted message final
/// exactly once (one final event per acceptance), and a message_id accepted only while it is not live.
@Suite struct DispatcherReuseSimulationTests {
    @Test(arguments: [11, 12, 13, 14, 15, 16, 17, 18, 19, 20] as [UInt64])
    func handlesStayTrueWhileMessageIDsAndSlotsAreReused(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let endpoints = [Endpoint(host: "a", port: 5235), Endpoint(host: "a", port: 5236)]
        var dispatcher = Dispatcher(configuration: DispatcherConfiguration(
            endpoints: endpoints, connections: 2, window: 4, maxAttempts: 3, seed: seed))
        var now = 0.0
        /// message_ids accepted and not yet final (by the final event's emission).
        var active = Set<String>()
        /// message_ids whose final event is not yet recorded, with its record id: still taken.
        var finalUnrecorded: [String: UInt64] = [:]
        var acceptances = 0
        var finalEvents = 0
        var connecting = Set<Int>()
        var live = Set<Int>()
        var heldPersists: [PersistResult] = []
        var heldRecords: [RecordRequest] = []
        let pool = (0..<12).map { "m-\($0)" }
        let codes: [CCSErrorCode] = [.serviceUnavailable, .badRegistration, .deviceMessageRateExceeded, .connectionDraining,
                                     .internalServerError]

        func apply(_ actions: [DispatcherAction]) {
            for action in actions {
                switch action {
                case .open(let id, _): connecting.insert(id)
                case .persist(let record, let line):
                    #expect(!active.contains(record.messageID) && finalUnrecorded[record.messageID] == nil
                            && !heldPersists.contains { $0.messageID == record.messageID },
                            "\(record.messageID) taken again while live")
                    heldPersists.append(PersistResult(messageID: record.messageID, line: line, outcome: .stored))
                case .record(let request):
                    heldRecords.append(request)
                    if request.event.isFinal, let id = request.finalMessageID {
                        #expect(active.remove(id) != nil, "final event for \(id), which is not accepted-and-not-final")
                        finalUnrecorded[id] = request.id
                        finalEvents += 1
                    }
                case .send(let c, let record):
                    #expect(live.contains(c), "sent on a connection that is not up")
                    #expect(active.contains(record.messageID), "sent \(record.messageID), not accepted or already final")
                    if record.timeToLive == 0 { #expect(record.sends <= 1, "time_to_live 0 sent \(record.sends) times") }
                default: break
                }
            }
            for (_, session) in dispatcher.sessions { #expect(session.window.inFlight <= 4) }
        }

        func storeAnswers(all: Bool) {
            if !heldPersists.isEmpty {
                let count = all ? heldPersists.count : Int.random(in: 1...heldPersists.count, using: &rng)
                var results = Array(heldPersists.prefix(count))
                heldPersists.removeFirst(count)
                if !all {
                    results = results.map { result in
                        switch Int.random(in: 0..<10, using: &rng) {
                        case 0: PersistResult(messageID: result.messageID, line: nil, outcome: .failed(reason: "disk"))
                        case 1: PersistResult(messageID: result.messageID, line: nil, outcome: .duplicateFinal(outcome: "{}"))
                        default: result
                        }
                    }
                }
                for result in results where result.outcome == .stored {
                    #expect(!active.contains(result.messageID), "\(result.messageID) accepted twice while live")
                    active.insert(result.messageID)
                    acceptances += 1
                }
                apply(dispatcher.persisted(results, now: now))
            }
            if !heldRecords.isEmpty {
                let count = all ? heldRecords.count : Int.random(in: 1...heldRecords.count, using: &rng)
                let confirmed = heldRecords.prefix(count)
                heldRecords.removeFirst(count)
                let through = confirmed.last!.id
                finalUnrecorded = finalUnrecorded.filter { $0.value > through }
                apply(dispatcher.recorded(through: through, now: now))
            }
        }

        apply(dispatcher.start(now: now))
        for _ in 0..<4000 {
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<22:
                let id = pool.randomElement(using: &rng)!
                let token = "tok-\(Int.random(in: 0..<3, using: &rng))"
                let ttl = [0, 2, 6, 2_419_200].randomElement(using: &rng)!
                let record = MessageRecord(messageID: id, json: "{\"n\":\(Int.random(in: 0..<1000, using: &rng))}", to: token,
                                           rateKey: token, acceptedAt: now, acceptedAtUnixMillis: Int64(now * 1000), timeToLive: ttl)
                apply(dispatcher.submit([(record, nil)], now: now))
            case 22..<40, 40..<52:
                // An answer for a message in flight, or (one in three) for any id on any connection: late, twice,
                // or on the wrong connection.
                let session: CCSSession?
                let id: String?
                if Int.random(in: 0..<3, using: &rng) == 0 {
                    session = dispatcher.sessions.values.randomElement(using: &rng)
                    id = pool.randomElement(using: &rng)
                } else {
                    let candidates = dispatcher.sessions.values.filter { live.contains($0.id) && !$0.inFlight.isEmpty }
                    session = candidates.randomElement(using: &rng)
                    id = session?.inFlight.randomElement(using: &rng)
                }
                guard let session, let id else { break }
                if roll < 40 {
                    apply(dispatcher.received(.ack(.init(messageID: id, from: nil)), on: session.id, now: now))
                } else if roll < 50 {
                    apply(dispatcher.received(.nack(.init(messageID: id, from: nil, error: codes.randomElement(using: &rng)!)),
                                              on: session.id, now: now))
                } else {
                    apply(dispatcher.received(.stanzaError(.init(id: id, messageID: id, condition: "bad-request")), on: session.id, now: now))
                }
            case 52..<62:
                storeAnswers(all: false)
            case 62..<70:
                guard let id = connecting.randomElement(using: &rng) else { break }
                connecting.remove(id)
                if Int.random(in: 0..<4, using: &rng) > 0 {
                    live.insert(id)
                    apply(dispatcher.connectionReady(id, now: now))
                } else {
                    apply(dispatcher.connectionEnded(id, .lost(reason: "refused"), now: now))
                }
            case 70..<72:
                guard let id = live.randomElement(using: &rng) else { break }
                apply(dispatcher.received(.control(controlType: .connectionDraining), on: id, now: now))
            case 72..<75:
                guard let id = live.randomElement(using: &rng) else { break }
                live.remove(id)
                apply(dispatcher.connectionEnded(id, .lost(reason: "reset"), now: now))
            default:
                now += Double.random(in: 0...1.5, using: &rng)
                apply(dispatcher.tick(now: now))
            }
        }

        var rounds = 0
        while (dispatcher.outstanding > 0 || !heldRecords.isEmpty || !heldPersists.isEmpty) && rounds < 10_000 {
            rounds += 1
            storeAnswers(all: true)
            for id in connecting {
                live.insert(id)
                apply(dispatcher.connectionReady(id, now: now))
            }
            connecting.removeAll()
            for session in dispatcher.sessions.values where live.contains(session.id) {
                for id in session.inFlight { apply(dispatcher.received(.ack(.init(messageID: id, from: nil)), on: session.id, now: now)) }
            }
            now += 5
            apply(dispatcher.tick(now: now))
        }
        #expect(acceptances > 100)
        #expect(dispatcher.outstanding == 0)
        #expect(dispatcher.isQuiescent)
        #expect(active.isEmpty)
        #expect(finalEvents == acceptances)
    }
}

import Testing
@testable import CCS

/// Random schedules through the dispatcher, with a store that answers at random delays, checking the rules
/// that must hold whatever the server and the store do: no connection above its window, nothing sent that
/// is not stored, no message final twice, no ACK before its hand-over is recorded, and every accepted message
/// final once at the end.
@Suite struct DispatcherSimulationTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func invariantsHoldUnderRandomServerAndStoreBehaviour(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let endpoints = [Endpoint(host: "a", port: 5235), Endpoint(host: "a", port: 5236)]
        var dispatcher = Dispatcher(
            configuration: DispatcherConfiguration(endpoints: endpoints, connections: 2, window: 5, maxAttempts: 4, seed: seed))
        var now = 0.0
        var accepted = Set<String>()
        var finals: [String: Int] = [:]
        var connecting = Set<Int>()
        var live = Set<Int>()
        var nextMessage = 0
        var nextUpstream = 0
        var heldPersists: [PersistResult] = []
        var heldRecords: [RecordRequest] = []
        var recordedHandOvers = Set<String>()
        var acked = 0
        let codes: [CCSErrorCode] = [.serviceUnavailable, .badRegistration, .deviceMessageRateExceeded, .connectionDraining,
                                     .internalServerError, "WHATEVER"]

        func apply(_ actions: [DispatcherAction]) {
            for action in actions {
                switch action {
                case .open(let id, _): connecting.insert(id)
                case .persist(let record, let line):
                    heldPersists.append(PersistResult(messageID: record.messageID, line: line, outcome: .stored))
                case .record(let request):
                    #expect(heldRecords.last.map { $0.id < request.id } ?? true, "record ids out of order")
                    heldRecords.append(request)
                case .send(let c, let record):
                    #expect(live.contains(c), "sent on a connection that is not up")
                    #expect(accepted.contains(record.messageID), "sent before it was stored")
                case .ack(_, _, let messageID):
                    #expect(recordedHandOvers.contains(messageID.key), "ACK of \(messageID) before its hand-over was recorded")
                    acked += 1
                default: break
                }
            }
            for (_, session) in dispatcher.sessions {
                #expect(session.window.inFlight <= 5)
            }
            // The driver's one read agrees with the separate ones, and the total of ACKs owed with the
            // counts by connection (the driver's pause check stops at the total).
            #expect(dispatcher.gauges() == Dispatcher.Gauges(
                outstanding: dispatcher.outstanding, liveJSONBytes: dispatcher.liveJSONBytes, nextWakeup: dispatcher.nextWakeup,
                isQuiescent: dispatcher.isQuiescent, inFlight: dispatcher.inFlight, isStopped: dispatcher.stopReason != nil))
            #expect(dispatcher.acksOwedInAll == dispatcher.acksOwedByConnection.values.reduce(0, +))
            #expect(dispatcher.acksOwedByConnection.values.allSatisfy { $0 > 0 })
        }

        /// The store commits a random prefix of what waits (or all of it).
        func storeAnswers(all: Bool) {
            if !heldPersists.isEmpty {
                let count = all ? heldPersists.count : Int.random(in: 1...heldPersists.count, using: &rng)
                let results = Array(heldPersists.prefix(count))
                heldPersists.removeFirst(count)
                for result in results { accepted.insert(result.messageID) }
                apply(dispatcher.persisted(results, now: now))
            }
            if !heldRecords.isEmpty {
                let count = all ? heldRecords.count : Int.random(in: 1...heldRecords.count, using: &rng)
                let confirmed = heldRecords.prefix(count)
                heldRecords.removeFirst(count)
                for request in confirmed {
                    if request.event.isFinal, let id = request.finalMessageID { finals[id, default: 0] += 1 }
                    if let id = request.handedOverMessageID { recordedHandOvers.insert(id) }
                }
                apply(dispatcher.recorded(through: confirmed.last!.id, now: now))
            }
        }

        apply(dispatcher.start(now: now))
        for _ in 0..<3000 {
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<25:
                let id = "m-\(nextMessage)"
                nextMessage += 1
                let token = "tok-\(Int.random(in: 0..<4, using: &rng))"
                let ttl = [0, 3, 50, 2_419_200].randomElement(using: &rng)!
                let record = MessageRecord(messageID: id, json: "{}", to: token, rateKey: token, acceptedAt: now,
                                           acceptedAtUnixMillis: Int64(now * 1000), timeToLive: ttl)
                apply(dispatcher.submit([(record, nil)], now: now))
            case 25..<45, 45..<57:
                let candidates = dispatcher.sessions.values.filter { live.contains($0.id) && !$0.inFlight.isEmpty }
                guard let session = candidates.randomElement(using: &rng), let id = session.inFlight.randomElement(using: &rng) else { break }
                if roll < 45 {
                    apply(dispatcher.received(.ack(.init(messageID: id, from: nil)), on: session.id, now: now))
                } else {
                    apply(dispatcher.received(.nack(.init(messageID: id, from: nil, error: codes.randomElement(using: &rng)!)), on: session.id, now: now))
                }
            case 57..<62:
                // Upstream messages, redelivered now and then.
                guard let id = live.randomElement(using: &rng) else { break }
                if nextUpstream == 0 || Bool.random(using: &rng) { nextUpstream += 1 }
                apply(dispatcher.received(.upstream(.init(messageID: "u-\(nextUpstream)", from: "dev", data: .null)), on: id, now: now))
            case 62..<70:
                storeAnswers(all: false)
            case 70..<78:
                guard let id = connecting.randomElement(using: &rng) else { break }
                connecting.remove(id)
                if Bool.random(using: &rng) {
                    live.insert(id)
                    apply(dispatcher.connectionReady(id, now: now))
                } else {
                    apply(dispatcher.connectionEnded(id, .lost(reason: "refused"), now: now))
                }
            case 78..<81:
                guard let id = live.randomElement(using: &rng) else { break }
                apply(dispatcher.received(.control(controlType: .connectionDraining), on: id, now: now))
            case 81..<84:
                guard let id = live.randomElement(using: &rng) else { break }
                live.remove(id)
                apply(dispatcher.connectionEnded(id, .lost(reason: "reset"), now: now))
            default:
                now += Double.random(in: 0...2, using: &rng)
                apply(dispatcher.tick(now: now))
            }
            #expect(finals.values.allSatisfy { $0 == 1 })
        }

        // Settle: the store answers, connections come up, everything is acked, time passes.
        var rounds = 0
        while (dispatcher.outstanding > 0 || !heldRecords.isEmpty) && rounds < 10_000 {
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
        #expect(accepted.count > 400)
        #expect(acked > 0)
        #expect(dispatcher.outstanding == 0)
        #expect(dispatcher.isQuiescent)
        #expect(Set(finals.keys) == accepted)
        #expect(finals.values.allSatisfy { $0 == 1 })
    }
}

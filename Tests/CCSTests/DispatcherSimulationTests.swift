import Testing
@testable import CCS

/// Random schedules through the dispatcher, checking the rules that must hold whatever the server does:
/// no connection above its window, no message final twice, and every accepted message final once at the end.
@Suite struct DispatcherSimulationTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func invariantsHoldUnderRandomServerBehaviour(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let endpoints = [Endpoint(host: "a", port: 5235), Endpoint(host: "a", port: 5236)]
        var dispatcher = Dispatcher(
            configuration: DispatcherConfiguration(endpoints: endpoints, connections: 2, window: 5, maxAttempts: 4, seed: seed),
            store: InMemoryMessageStore())
        var now = 0.0
        var accepted = Set<String>()
        var finals: [String: Int] = [:]
        var connecting = Set<Int>()
        var live = Set<Int>()
        var nextMessage = 0
        let codes = ["SERVICE_UNAVAILABLE", "BAD_REGISTRATION", "DEVICE_MESSAGE_RATE_EXCEEDED", "CONNECTION_DRAINING", "INTERNAL_SERVER_ERROR", "WHATEVER"]

        func apply(_ actions: [DispatcherAction]) {
            for action in actions {
                switch action {
                case .open(let id, _): connecting.insert(id)
                case .event(let event):
                    switch event {
                    case .accepted(let id): accepted.insert(id)
                    case .acked(let id, _, _, _), .expired(let id): finals[id, default: 0] += 1
                    case .nacked(let id, _, _, true, _, _): finals[id, default: 0] += 1
                    default: break
                    }
                case .send(let c, _):
                    #expect(live.contains(c), "sent on a connection that is not up")
                default: break
                }
            }
            for (_, session) in dispatcher.sessions {
                #expect(session.window.inFlight <= 5)
            }
        }

        apply(dispatcher.start(now: now))
        for _ in 0..<3000 {
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<30:
                let id = "m-\(nextMessage)"
                nextMessage += 1
                let token = "tok-\(Int.random(in: 0..<4, using: &rng))"
                let ttl = [0, 3, 50, 2_419_200].randomElement(using: &rng)!
                apply(dispatcher.accept(MessageRecord(messageID: id, json: "{}", to: token, rateKey: token, acceptedAt: now, timeToLive: ttl), now: now))
            case 30..<55, 55..<70:
                let candidates = dispatcher.sessions.values.filter { live.contains($0.id) && !$0.inFlight.isEmpty }
                guard let session = candidates.randomElement(using: &rng), let id = session.inFlight.randomElement(using: &rng) else { break }
                if roll < 55 {
                    apply(dispatcher.received(.ack(.init(messageID: id, from: nil)), on: session.id, now: now))
                } else {
                    apply(dispatcher.received(.nack(.init(messageID: id, from: nil, error: codes.randomElement(using: &rng)!)), on: session.id, now: now))
                }
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
                apply(dispatcher.received(.control(controlType: "CONNECTION_DRAINING"), on: id, now: now))
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

        // Settle: bring connections up, ack everything, let time pass until nothing is outstanding.
        var rounds = 0
        while dispatcher.outstanding > 0 && rounds < 10_000 {
            rounds += 1
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
        #expect(accepted.count > 500)
        #expect(dispatcher.outstanding == 0)
        #expect(Set(finals.keys) == accepted)
        #expect(finals.values.allSatisfy { $0 == 1 })
    }
}

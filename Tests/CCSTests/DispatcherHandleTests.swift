import Testing
@testable import CCS

/// The compact-handle bookkeeping of the dispatcher against the rules it stands for: the fast paths (the
/// store's answers found in submit order) against the lookups by message_id they replace.
@Suite struct DispatcherHandleTests {
    typealias Harness = DispatcherTests.Harness

    // MARK: The store's answers

    /// The store may answer persist requests in any subset and order: each answer finds its own message
    /// whether it is the oldest one persisting (the fast path) or not (by message_id), and answers for ids
    /// not persisting change nothing. Debug builds check each fast-path answer against the lookup.
    @Test(arguments: [1, 2, 3])
    func persistAnswersInAnyOrderFindTheirOwnMessages(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var h = Harness(window: 100)
        h.startReady()
        h.holdPersists = true
        var accepted: [String] = []
        for round in 0..<40 {
            for i in 0..<Int(random.next() % 20) { h.accept("m-\(round)-\(i)", line: i) }
            var held = h.heldPersists
            h.heldPersists.removeAll()
            // Answer a random part of what is held, in a random order; keep the rest for a later round.
            for i in held.indices.reversed() { held.swapAt(i, Int(random.next() % UInt64(i + 1))) }
            let answered = held.prefix(Int(random.next() % UInt64(held.count + 1)))
            h.heldPersists = Array(held.dropFirst(answered.count))
            var results = answered.map { PersistResult(messageID: $0.record.messageID, line: $0.line, outcome: .stored) }
            if random.next() % 4 == 0, let first = results.first { results.append(first) }  // answered twice
            results.append(PersistResult(messageID: "never-submitted", line: nil, outcome: .stored))
            let before = h.dispatcher.counters.accepted
            h.answer(results)
            accepted += answered.map(\.record.messageID)
            #expect(h.dispatcher.persisting == h.heldPersists.count)
            #expect(h.dispatcher.counters.accepted - before == answered.count, "each message accepted once")
            #expect(h.dispatcher.persistingOrder.count <= 4 * h.dispatcher.persisting + 64 + 20)
        }
        accepted += h.heldPersists.map(\.record.messageID)
        h.answerPersists()
        #expect(h.dispatcher.persisting == 0)
        #expect(h.dispatcher.pending == h.dispatcher.outstanding)
        // The accepted ones went on the wire in the order they were answered.
        let sentIDs = h.sends.map(\.messageID)
        #expect(sentIDs.count == min(100, accepted.count))
        #expect(sentIDs == Array(accepted.prefix(sentIDs.count)))
    }

    // MARK: Messages that leave the table while in flight

    /// Abandoned while in flight, a message leaves the live table once its final event is recorded, but CCS
    /// still counts it: it keeps its window slot until its ack arrives (found by message_id, its handle being
    /// stale), and its slot reused by a new message changes nothing of that.
    @Test func anAbandonedMessageInFlightHoldsItsWindowSlotUntilItsAck() {
        var h = Harness(window: 2)
        h.startReady()
        h.accept("a")
        h.accept("b")
        h.apply(h.dispatcher.abandonOutstanding())
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.dispatcher.orphansInFlight == 2)
        #expect(h.dispatcher.inFlight == 2)
        #expect(Set(h.dispatcher.sessions[1]!.inFlight) == ["a", "b"])
        #expect(h.dispatcher.sessions[1]!.sentAt == ["a": 0, "b": 0])
        h.ack("zzz", on: 1)
        #expect(h.dispatcher.counters.unmatchedResolutions == 1)
        h.ack("b", on: 1)
        #expect(h.dispatcher.inFlight == 1)
        #expect(h.dispatcher.orphansInFlight == 1)
        #expect(h.dispatcher.counters.unmatchedResolutions == 1)
        #expect(h.dispatcher.sessions[1]!.inFlight == ["a"])
        h.ack("b", on: 1)  // once only
        #expect(h.dispatcher.counters.unmatchedResolutions == 2)
        // The connection ends with "a" still out: nothing is resent (it is final), nothing is left over.
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: h.now))
        #expect(h.dispatcher.orphansInFlight == 0)
        #expect(h.dispatcher.inFlight == 0)
        #expect(h.sends.map(\.messageID) == ["a", "b"])
    }

    /// The ack timer of an abandoned message in flight still ends a silent connection, as the timer of any
    /// message in flight does: its handle is stale, so the timer finds it in its session by scan.
    @Test func anAbandonedMessageInFlightStillTimesItsConnectionOut() {
        var h = Harness(window: 1, ackTimeout: 30)
        h.startReady()
        h.accept("a")
        h.apply(h.dispatcher.abandonOutstanding())
        #expect(h.dispatcher.orphansInFlight == 1)
        h.advance(to: 29)
        #expect(h.aborts.isEmpty)
        h.advance(to: 31)
        #expect(h.aborts == [1])
        #expect(h.dispatcher.orphansInFlight == 0)
    }

    /// Acks in any order move the other messages in flight within their session (swap on removal): each
    /// later ack still finds its message through the live table's wire position (debug builds check each
    /// one against a scan by message_id), and resends after a lost connection go in message_id order.
    @Test func acksInAnyOrderKeepTheWirePositionsRight() {
        var random = SplitMix64(seed: 9)
        var h = Harness(window: 50)
        h.startReady()
        for i in 0..<50 { h.accept("m-\(i)") }
        var open = (0..<50).map { "m-\($0)" }
        for _ in 0..<30 {
            let id = open.remove(at: Int(random.next() % UInt64(open.count)))
            h.ack(id, on: 1)
        }
        #expect(h.dispatcher.counters.acked == 30)
        #expect(Set(h.dispatcher.sessions[1]!.inFlight) == Set(open))
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: h.now))
        h.advance(to: 100)  // past the reconnect backoff
        let next = h.opened.last!.connection
        #expect(next == 2)
        h.apply(h.dispatcher.connectionReady(next, now: h.now))
        #expect(Array(h.sends.map(\.messageID).suffix(20)) == open.sorted())
        for id in open { h.ack(id, on: next) }
        #expect(h.dispatcher.counters.acked == 50)
        #expect(h.dispatcher.counters.unmatchedResolutions == 0)
    }

    // MARK: RateLimit by key handle

    /// The RATE_EXCEEDED rule as it was written before keys were interned: maps by key text. Random
    /// additions, ends, acks, strikes, parks and unblocks (stale ones included) must give the same answers
    /// from both, and the same count of keys tracked.
    @Test(arguments: [1, 2, 3, 4])
    func rateLimitByKeyHandleAgreesWithTheRuleByKeyText(seed: UInt64) {
        struct Reference {
            var blocked: [String: (until: Double, waiting: [String])] = [:]
            var strikes: [String: Int] = [:]
            var outstanding: [String: Int] = [:]
            mutating func added(_ key: String) { outstanding[key, default: 0] += 1 }
            mutating func ended(_ key: String) {
                if let count = outstanding[key] {
                    if count > 1 { outstanding[key] = count - 1; return }
                    outstanding[key] = nil
                }
                strikes[key] = nil
            }
            mutating func acked(_ key: String) { strikes[key] = nil }
            mutating func strike(_ key: String, message: String, now: Double, backoff: Backoff, random: inout SplitMix64) -> Double {
                let count = (strikes[key] ?? 0) + 1
                strikes[key] = count
                let until = now + backoff.delay(attempt: count, using: &random)
                var block = blocked[key] ?? (until, [])
                block.until = max(block.until, until)
                block.waiting.append(message)
                blocked[key] = block
                return block.until
            }
            mutating func park(_ key: String, message: String, now: Double) -> Bool {
                guard var block = blocked[key], block.until > now else { return false }
                block.waiting.append(message)
                blocked[key] = block
                return true
            }
            mutating func unblock(_ key: String, now: Double) -> [String]? {
                guard let block = blocked[key], block.until <= now else { return nil }
                blocked[key] = nil
                return block.waiting
            }
            var keysTracked: Int { strikes.count + blocked.count + outstanding.count }
        }

        var random = SplitMix64(seed: seed)
        var reference = Reference()
        var rateLimit = RateLimit()
        var referenceRandom = SplitMix64(seed: 7), rateLimitRandom = SplitMix64(seed: 7)
        let backoff = Backoff(base: 1, cap: 8)
        // Outstanding messages: name, key text, key handle, live-table handle.
        var messages: [(name: String, key: String, handle: RateLimit.Key, slot: LiveTable.Handle)] = []
        // Unblock timers, fired at their time in time order as the dispatcher's timers are.
        var unblockTimers: [(due: Double, key: String, handle: RateLimit.Key)] = []
        var now = 0.0, next = 0
        for step in 0..<5_000 {
            now += Double(random.next() % 100) / 100
            switch random.next() % 6 {
            case 0, 1:
                let key = "token-\(random.next() % 5)"
                reference.added(key)
                messages.append(("m-\(next)", key, rateLimit.added(key: key), LiveTable.Handle(slot: Int32(next), generation: 0)))
                next += 1
            case 2 where !messages.isEmpty:
                let message = messages.remove(at: Int(random.next() % UInt64(messages.count)))
                reference.ended(message.key)
                rateLimit.ended(message.handle)
                if random.next() % 2 == 0 {  // acked: the ack comes after the end, as in the dispatcher
                    reference.acked(message.key)
                    rateLimit.acked(message.handle)
                }
            case 3 where !messages.isEmpty:
                let message = messages[Int(random.next() % UInt64(messages.count))]
                let expected = reference.strike(message.key, message: message.name, now: now, backoff: backoff, random: &referenceRandom)
                let got = rateLimit.strike(message.handle, handle: message.slot, now: now, backoff: backoff, using: &rateLimitRandom)
                #expect(got == expected, "step \(step)")
                unblockTimers.append((got, message.key, message.handle))
            case 4 where !messages.isEmpty:
                let message = messages[Int(random.next() % UInt64(messages.count))]
                #expect(rateLimit.parkIfBlocked(message.handle, handle: message.slot, now: now)
                        == reference.park(message.key, message: message.name, now: now), "step \(step)")
            case 5:
                unblockTimers.sort { $0.due < $1.due }
                while let timer = unblockTimers.first, timer.due <= now {
                    unblockTimers.removeFirst()
                    let expected = reference.unblock(timer.key, now: now)
                    let got = rateLimit.unblock(timer.handle, now: now)?.map { "m-\($0.slot)" }
                    #expect(got == expected, "step \(step)")
                }
            default:
                break
            }
            #expect(rateLimit.keysTracked == reference.keysTracked, "step \(step)")
        }
    }
}

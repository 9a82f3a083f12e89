import Testing
import XMPP

/// The keepalive rule driven as `XMPPClient` drives it, on a manual clock: one timer armed at `deadline`,
/// re-armed when `received(at:)` returns a new deadline. For every sequence of pings, replies and
/// unsolicited traffic, each ping goes out exactly `pingInterval` after the last inbound byte and the peer
/// is declared dead exactly `deadPeerTimeout` after it, with a ping outstanding. Before the fix the timer
/// stayed armed for the dead-peer check after a ping was answered, so the silence before the next ping
/// alternated between `pingInterval` and `deadPeerTimeout - pingInterval`.
@Suite struct KeepaliveScheduleTests {
    /// A small deterministic generator (SplitMix64), so every run checks the same sequences.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    struct Trace {
        /// (time, seconds since the last inbound byte) of each ping.
        var pings: [(at: Double, silence: Double)] = []
        /// (time, seconds since the last inbound byte) when the peer was declared dead.
        var dead: (at: Double, silence: Double)?
        var rearms = 0
    }

    /// Runs the driver until `horizon`. `reply(k)` is the delay of the peer's answer to ping `k` (nil: no
    /// answer); `traffic` are times of unsolicited inbound bytes.
    static func drive(interval: Double, dead: Double, horizon: Double, traffic: [Double],
                      reply: (Int) -> Double?) -> Trace {
        var keepalive = Keepalive(pingInterval: interval, deadPeerTimeout: dead, now: 0)
        var armed = keepalive.deadline
        var inbound = traffic.sorted()
        var lastByte = 0.0
        var outstanding = false
        var trace = Trace()
        for _ in 0..<100_000 {
            let nextByte = inbound.first ?? .infinity
            let now = min(armed, nextByte)
            if now > horizon { break }
            if nextByte <= armed {
                inbound.removeFirst()
                lastByte = now
                outstanding = false
                if let deadline = keepalive.received(at: now) {
                    #expect(deadline < armed, "re-armed later than the armed timer")
                    armed = deadline
                    trace.rearms += 1
                }
                continue
            }
            switch keepalive.check(at: now) {
            case .none:
                break
            case .sendPing:
                #expect(!outstanding, "a second ping while one was outstanding at \(now)")
                outstanding = true
                trace.pings.append((now, now - lastByte))
                if let delay = reply(trace.pings.count - 1) {
                    inbound.append(now + delay)
                    inbound.sort()
                }
            case .deadPeer:
                #expect(outstanding, "dead peer declared with no ping outstanding at \(now)")
                trace.dead = (now, now - lastByte)
                return trace
            }
            guard keepalive.deadline > now else {
                Issue.record("the next check \(keepalive.deadline) is not after \(now)")
                return trace
            }
            armed = keepalive.deadline
        }
        return trace
    }

    @Test func aPingAnsweredAtOnceIsFollowedByTheNextPingOneIntervalAfterTheReply() {
        let trace = Self.drive(interval: 30, dead: 90, horizon: 400, traffic: [], reply: { _ in 0.1 })
        let expected = (0..<13).map { 30 + 30.1 * Double($0) }  // 30, 60.1, 90.2, …
        #expect(trace.pings.count == expected.count && zip(trace.pings, expected).allSatisfy { abs($0.at - $1) < 1e-6 },
                "ping times \(trace.pings.map(\.at))")
        #expect(trace.pings.allSatisfy { abs($0.silence - 30) < 1e-9 }, "silences \(trace.pings.map(\.silence))")
        #expect(trace.dead == nil)
        #expect(trace.rearms == trace.pings.count)
    }

    @Test func aPeerThatStopsAnsweringIsDeadExactlyDeadPeerSecondsAfterItsLastByte() {
        let trace = Self.drive(interval: 30, dead: 90, horizon: 1000, traffic: [12.5],
                               reply: { $0 < 3 ? 7 : nil })
        #expect(trace.pings.allSatisfy { abs($0.silence - 30) < 1e-9 }, "silences \(trace.pings.map(\.silence))")
        #expect(trace.pings.count == 4)
        #expect(trace.dead.map { abs($0.silence - 90) < 1e-9 } == true, "declared dead after \(String(describing: trace.dead))")
    }

    /// Random intervals, reply delays (answered, late or never) and unsolicited traffic: the rule holds in every run.
    @Test func theRuleHoldsForEverySequence() {
        var generator = SplitMix64(state: 0xCC5D)
        for run in 0..<300 {
            let interval = Double.random(in: 1...60, using: &generator).rounded()
            let dead = interval + Double.random(in: 1...120, using: &generator).rounded()
            let traffic = (0..<Int.random(in: 0...30, using: &generator)).map { _ in
                Double.random(in: 0...2000, using: &generator)
            }
            var delays: [Double?] = (0..<200).map { _ in
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: nil  // never answered
                case 1: Double.random(in: (dead - interval)...(2 * dead), using: &generator)  // too late
                default: Double.random(in: 0..<(dead - interval), using: &generator)
                }
            }
            delays.append(nil)
            let trace = Self.drive(interval: interval, dead: dead, horizon: 3000, traffic: traffic,
                                   reply: { delays[min($0, delays.count - 1)] })
            for ping in trace.pings {
                #expect(abs(ping.silence - interval) < 1e-6,
                        "run \(run): ping after \(ping.silence) s of silence (interval \(interval), dead \(dead))")
            }
            if let deadPeer = trace.dead {
                #expect(abs(deadPeer.silence - dead) < 1e-6, "run \(run): dead after \(deadPeer.silence) s (dead \(dead))")
            }
        }
    }

    /// A check that comes late (the machine was suspended) pings first and gives the peer time to answer.
    @Test func aLateCheckPingsFirstAndWaitsForTheAnswer() {
        var keepalive = Keepalive(pingInterval: 30, deadPeerTimeout: 90, now: 0)
        #expect(keepalive.check(at: 500) == .sendPing)
        #expect(keepalive.deadline == 560)
        #expect(keepalive.check(at: 559) == .none)
        #expect(keepalive.check(at: 560) == .deadPeer)
    }
}

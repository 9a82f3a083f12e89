import Testing
@testable import CCS

/// A server that ends one session for each login beyond a per-account limit (ejabberd's
/// `max_user_sessions`: the oldest session gets a `conflict` stream error), against a pool with one
/// connection more than the limit, on a fake clock. Before the fix each new login ended a healthy
/// connection, which reconnected at once and ended the next one: logins without end through the pool.
@Suite struct SessionLimitReconnectTests {
    typealias Harness = DispatcherTests.Harness
    let policy = ReconnectPolicy(backoff: Backoff(base: 1, cap: 60), refusedBackoff: Backoff(base: 300, cap: 3600))

    @Test func aReplacedConnectionBacksOffWhateverItsAge() {
        var state = ReconnectPolicy.SlotState()
        #expect(policy.next(after: .replaced, state: &state, u: 0) == .init(delay: 1, switchEndpoint: true))
        #expect(policy.next(after: .replaced, state: &state, u: 0).delay == 2)
        #expect(state.failures == 2, "a replaced connection cleared the failures")
        // Only a healthy drop clears them.
        #expect(policy.next(after: .droppedAfter(seconds: 3600), state: &state, u: 0).delay == 0)
        #expect(state == .init())
    }

    @Test func ageCountsFromTheLatestLoginInThePool() {
        #expect(ReconnectPolicy.age(loggedInAt: 0, latestLoginInPool: nil, now: 100) == 100)
        #expect(ReconnectPolicy.age(loggedInAt: 0, latestLoginInPool: 0, now: 100) == 100)
        #expect(ReconnectPolicy.age(loggedInAt: 0, latestLoginInPool: 99.5, now: 100) == 0.5)
        #expect(!policy.isHealthy(loggedInFor: ReconnectPolicy.age(loggedInAt: 0, latestLoginInPool: 95, now: 100)))
    }

    /// How the server ends the session it drops: `conflict` (ejabberd), or a plain stream end or FIN.
    enum Form: String, CaseIterable, Sendable { case conflict, lost }

    /// Runs the pool against a server allowing `limit` sessions for `seconds`; each login takes 10 ms and the
    /// server ends the oldest session 10 ms after a login beyond the limit. Returns the opens' times.
    static func run(connections: Int, limit: Int, form: Form, seconds: Double) -> (opens: [Double], harness: Harness) {
        var h = Harness(connections: connections)
        h.apply(h.dispatcher.start(now: 0))
        var opens: [Double] = []
        var handled = 0
        var loggingIn: [(id: Int, at: Double)] = []
        var loggedIn: [Int] = []  // oldest first
        var kicks: [(id: Int, at: Double)] = []
        while h.now < seconds {
            while handled < h.opened.count {
                opens.append(h.now)
                loggingIn.append((h.opened[handled].connection, h.now + 0.01))
                handled += 1
            }
            for (id, _) in loggingIn.filter({ $0.at <= h.now }) {
                h.apply(h.dispatcher.connectionReady(id, now: h.now))
                loggedIn.append(id)
                if loggedIn.count > limit { kicks.append((loggedIn.removeFirst(), h.now + 0.01)) }
            }
            loggingIn.removeAll { $0.at <= h.now }
            for (id, _) in kicks.filter({ $0.at <= h.now }) {
                let end: ConnectionEnd = form == .conflict
                    ? .replaced(reason: "stream error (conflict): Replaced by new connection")
                    : .lost(reason: "connection closed by server")
                h.apply(h.dispatcher.connectionEnded(id, end, now: h.now))
            }
            kicks.removeAll { $0.at <= h.now }
            h.advance(to: h.now + 0.005)
        }
        return (opens, h)
    }

    /// Ten minutes with one connection more than the limit: every slot waits its backoff after each
    /// drop (none reconnects at once), so the pool makes at most `connections` times the attempts one failing
    /// slot makes (6 in the first 30 s, then one per 48–60 s), and the churn slows down instead of
    /// speeding up.
    @Test(arguments: Form.allCases, [(connections: 3, limit: 2), (connections: 11, limit: 10)])
    func onePastTheSessionLimitBacksOffInsteadOfStorming(form: Form, pool: (connections: Int, limit: Int)) {
        let (opens, h) = Self.run(connections: pool.connections, limit: pool.limit, form: form, seconds: 600)
        #expect(h.dispatcher.counters.reconnects == 0, "\(h.dispatcher.counters.reconnects) reconnects at once after a drop")
        let perSlot = 6 + Int((600 - 30) / 48) + 1
        #expect(opens.count <= pool.connections * perSlot, "\(opens.count) logins in 600 s with \(pool.connections) connections")
        for start in stride(from: 0.0, through: 570, by: 1) {
            let inWindow = opens.filter { $0 >= start && $0 < start + 30 }.count
            #expect(inWindow <= 6 * pool.connections, "\(inWindow) logins in the 30 s from \(start)")
        }
        // The last five minutes: one attempt per slot per 48 s at most.
        let late = opens.filter { $0 >= 300 }.count
        #expect(late <= pool.connections * (300 / 48 + 1), "\(late) logins in the last 300 s")
    }

    /// Connections that drop together (a server restart) all reconnect at once: a drop counts as young only
    /// after a login in the pool, and none came between them.
    @Test func healthyConnectionsDroppingTogetherAllReconnectAtOnce() {
        var h = Harness(connections: 3)
        h.startReady()
        h.advance(to: 60)
        for id in 1...3 { h.apply(h.dispatcher.connectionEnded(id, .lost(reason: "restart"), now: h.now)) }
        #expect(h.opened.count == 6)
        #expect(h.dispatcher.counters.reconnects == 3)
    }

    /// A healthy connection that drops right after another connection's login backs off.
    @Test func aHealthyDropRightAfterAnotherLoginBacksOff() {
        var h = Harness(connections: 2)
        h.startReady()
        h.advance(to: 60)
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "closed"), now: h.now))
        #expect(h.opened.count == 3, "a healthy drop reconnects at once")
        h.apply(h.dispatcher.connectionReady(3, now: h.now + 0.01))
        h.apply(h.dispatcher.connectionEnded(2, .lost(reason: "closed"), now: h.now + 0.02))
        #expect(h.opened.count == 3, "a drop 10 ms after another login reconnected at once")
        h.advance(to: h.now + 1.3)
        #expect(h.opened.count == 4)
    }
}

/// When a pool slot opens its next connection after the last one ended, as a pure function
/// (ccs-protocol.md §5; a server must never see a reconnect storm, whatever the failure).
///
/// A connection's age, for this rule, is counted from the latest login in its pool, its own or another
/// connection's (`age(loggedInAt:latestLoginInPool:now:)`): a drop that follows within `healthyAfter`
/// seconds of any login is young, however long the connection itself was logged in. A server that closes
/// an older session for each new login (a per-account session limit: ejabberd's `max_user_sessions` ends
/// the oldest session with a `conflict` stream error) otherwise makes each new login end a healthy
/// connection that reconnects at once and ends the next one: a reconnect storm through the whole pool.
///
/// The rule, per slot:
/// - **Healthy drop**: the connection was logged in, and no connection of the pool logged in, for at least
///   `healthyAfter` seconds. The slot's failures are cleared and it reconnects at once, to the same
///   endpoint (CCS asks for that, §5).
/// - **Failure**: the connection never logged in (TCP, TLS or login failed), or it dropped within
///   `healthyAfter` seconds of a login in the pool, whatever the form (stream error, `</stream:stream>`,
///   FIN, RST, unparseable XML, `see-other-host`). Failures count up; the slot waits
///   `backoff.delay(attempt: failures)` and tries the other endpoint.
/// - **Replaced**: the server ended the stream with `conflict` (RFC 6120 §4.9.3.3: a new login with the
///   same identity replaced this one, possibly a login of another process with the same credentials).
///   A failure whatever the age: reconnecting at once would replace another session in turn.
/// - **Drain** (CONNECTION_DRAINING): the replacement always goes to the other endpoint. After a healthy
///   connection it opens at once. A drain within `healthyAfter` of login counts as a failure, but the first
///   one in a row still opens at once (draining is CCS's normal way to move a client, and the draining
///   connection keeps working); from the second in a row the slot waits `backoff.delay(attempt: failures)`
///   (2 s, 4 s, … as if the first had waited too), so a server that drains every login gets at most 6
///   attempts per slot in 30 s, like any other failure.
/// - **Refusal**: the server named a condition that reconnecting cannot heal (`ConnectionEnd.refused`).
///   Refusals count up apart; the slot waits `refusedBackoff.delay(attempt: refusals)` (minutes by
///   default) and tries the other endpoint.
///
/// Both counts reset only when a connection was healthy. So a server that ends every stream right after
/// login, or ends another stream for every login, gets backed-off attempts, never a loop: every attempt
/// of a slot but those after a healthy drop waits its backoff, and a healthy drop needs `healthyAfter`
/// seconds without any login in the pool, so those at-once attempts come at most once per `healthyAfter`
/// for the whole pool, plus one burst when connections drop together (at most one per slot). With the defaults (backoff 1 s…60 s, jitter 0.2,
/// `healthyAfter` 10 s) that is at most 6 attempts per slot in the first 30 s, then one per 48–60 s:
///
///     failure n:   1        2        3        4        5          6          7+
///     wait (s):    0.8–1.2  1.6–2.4  3.2–4.8  6.4–9.6  12.8–19.2  25.6–38.4  48–60
///
/// A connection that lives just over `healthyAfter` each time reconnects at once each time: at most one
/// attempt per `healthyAfter` seconds from that path.
public struct ReconnectPolicy: Sendable, Equatable {
    /// Backoff after a failed connection.
    public var backoff: Backoff
    /// Backoff after a refusal that retrying cannot heal.
    public var refusedBackoff: Backoff
    /// Seconds a connection must stay logged in before its drop counts as healthy.
    public var healthyAfter: Double

    /// The default `healthyAfter`: 10 s.
    public static let defaultHealthyAfter = 10.0

    public init(backoff: Backoff, refusedBackoff: Backoff, healthyAfter: Double = defaultHealthyAfter) {
        self.backoff = backoff
        self.refusedBackoff = refusedBackoff
        self.healthyAfter = healthyAfter
    }

    /// What a slot remembers between connections.
    public struct SlotState: Sendable, Equatable {
        /// Failed connections since the last healthy one.
        public var failures = 0
        /// Refusals since the last healthy connection.
        public var refusals = 0
        public init() {}
    }

    /// How a connection ended, as far as this rule cares. Ages are `age(loggedInAt:latestLoginInPool:now:)`.
    public enum Ending: Sendable, Equatable {
        /// It logged in, was that many seconds old, then dropped.
        case droppedAfter(seconds: Double)
        /// It started draining at that age.
        case drainedAfter(seconds: Double)
        /// The server ended it with `conflict`: another login replaced it (RFC 6120 §4.9.3.3), at any age.
        case replaced
        /// It never logged in.
        case neverLoggedIn
        /// The server refused it with a condition retrying cannot heal (logged in or not).
        case refused
    }

    /// The next attempt.
    public struct Decision: Sendable, Equatable {
        /// Seconds to wait; 0 = at once.
        public var delay: Double
        /// Whether the next attempt goes to the other endpoint.
        public var switchEndpoint: Bool
        public init(delay: Double, switchEndpoint: Bool) {
            self.delay = delay
            self.switchEndpoint = switchEndpoint
        }
    }

    /// A connection's age for this rule, in seconds: since its own login (`loggedInAt`) or since the latest
    /// login of any connection in its pool (`latestLoginInPool`, which may be its own), whichever is later.
    public static func age(loggedInAt: Double, latestLoginInPool: Double?, now: Double) -> Double {
        now - max(loggedInAt, latestLoginInPool ?? loggedInAt)
    }

    /// Whether a connection of age `seconds` was healthy.
    public func isHealthy(loggedInFor seconds: Double) -> Bool { seconds >= healthyAfter }

    /// Updates `state` for a connection that ended as `ending` and says when and where to reconnect.
    /// `u` is the jitter draw in [-1, 1].
    public func next(after ending: Ending, state: inout SlotState, u: Double) -> Decision {
        switch ending {
        case .droppedAfter(let seconds) where isHealthy(loggedInFor: seconds):
            state = SlotState()
            return Decision(delay: 0, switchEndpoint: false)
        case .drainedAfter(let seconds) where isHealthy(loggedInFor: seconds):
            state = SlotState()
            return Decision(delay: 0, switchEndpoint: true)
        case .drainedAfter:
            state.failures += 1
            let delay = state.failures == 1 ? 0 : backoff.delay(attempt: state.failures, u: u)
            return Decision(delay: delay, switchEndpoint: true)
        case .droppedAfter, .neverLoggedIn, .replaced:
            state.failures += 1
            return Decision(delay: backoff.delay(attempt: state.failures, u: u), switchEndpoint: true)
        case .refused:
            state.failures += 1
            state.refusals += 1
            return Decision(delay: refusedBackoff.delay(attempt: state.refusals, u: u), switchEndpoint: true)
        }
    }

    /// `next(after:state:u:)` with a fresh draw from `generator`, drawn only when a wait is due.
    public func next(after ending: Ending, state: inout SlotState, using generator: inout some RandomNumberGenerator) -> Decision {
        switch ending {
        case .droppedAfter(let seconds) where isHealthy(loggedInFor: seconds),
             .drainedAfter(let seconds) where isHealthy(loggedInFor: seconds):
            return next(after: ending, state: &state, u: 0)
        default:
            break
        }
        return next(after: ending, state: &state, u: Double.random(in: -1...1, using: &generator))
    }
}

/// When a pool slot opens its next connection after the last one ended, as a pure function
/// (ccs-protocol.md §5; a server must never see a reconnect storm, whatever the failure).
///
/// The rule, per slot:
/// - **Healthy drop**: the connection stayed logged in for at least `healthyAfter` seconds. The slot's
///   failures are cleared and it reconnects at once, to the same endpoint (CCS asks for that, §5).
/// - **Failure**: the connection never logged in (TCP, TLS or login failed), or it dropped within
///   `healthyAfter` seconds of logging in, whatever the form (stream error, `</stream:stream>`, FIN, RST,
///   unparseable XML, `see-other-host`). Failures count up; the slot waits
///   `backoff.delay(attempt: failures)` and tries the other endpoint.
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
/// login gets backed-off attempts, never a loop. With the defaults (backoff 1 s…60 s, jitter 0.2,
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

    /// How a connection ended, as far as this rule cares.
    public enum Ending: Sendable, Equatable {
        /// It logged in and stayed that many seconds, then dropped (or started draining).
        case droppedAfter(seconds: Double)
        /// It started draining that many seconds after logging in.
        case drainedAfter(seconds: Double)
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

    /// Whether a connection logged in for `seconds` was healthy.
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
        case .droppedAfter, .neverLoggedIn:
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

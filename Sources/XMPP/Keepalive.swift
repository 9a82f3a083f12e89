/// Keepalive and dead-peer detection as a pure function of time (XEP-0199 §4, ccs-protocol.md §5).
///
/// Times are seconds on a monotonic clock the driver supplies. The rule, for every sequence of inbound
/// bytes and checks:
/// - **Ping** when `pingInterval` seconds have passed since the last inbound byte and no ping is
///   outstanding; the ping is outstanding until the next inbound byte (any byte counts as life, so ping
///   replies need no matching).
/// - **Dead peer** when `deadPeerTimeout` seconds have passed since the last inbound byte with a ping
///   outstanding. The peer always gets at least `deadPeerTimeout - pingInterval` seconds to answer a ping
///   (should the driver's check come late, say after a suspended machine wakes up, the ping goes out first).
///
/// The driver keeps one timer armed at `deadline` and calls `check(at:)` when it fires; `received(at:)`
/// returns a new deadline when an inbound byte moved the next check earlier than the armed one (after the
/// reply to a ping: the next ping is due `pingInterval` after that reply, not `deadPeerTimeout` after the
/// byte before the ping), so the driver re-arms then and only then (at most once per ping).
public struct Keepalive: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        case none
        case sendPing
        case deadPeer
    }

    /// Seconds of inbound silence before we send a ping. Default 30.
    public var pingInterval: Double
    /// Seconds of inbound silence, with a ping outstanding, after which the connection is dead. Default 90;
    /// must exceed `pingInterval`.
    public var deadPeerTimeout: Double
    /// When the driver's timer must fire next (seconds on the driver's clock).
    public private(set) var deadline: Double
    private var lastReceived: Double
    /// When the outstanding ping went out; nil when none is outstanding.
    private var pingSentAt: Double?

    public init(pingInterval: Double = 30, deadPeerTimeout: Double = 90, now: Double) {
        precondition(deadPeerTimeout > pingInterval, "deadPeerTimeout must exceed pingInterval")
        self.pingInterval = pingInterval
        self.deadPeerTimeout = deadPeerTimeout
        self.lastReceived = now
        self.deadline = now + pingInterval
    }

    /// Bytes arrived from the peer at `now`. Returns the new `deadline` when the driver must re-arm its
    /// timer earlier than it is armed; nil when the armed timer is early enough (its check then finds
    /// nothing due and the driver re-arms at the `deadline` that check sets).
    @discardableResult
    public mutating func received(at now: Double) -> Double? {
        lastReceived = max(lastReceived, now)
        pingSentAt = nil
        let next = nextCheck()
        guard next < deadline else { return nil }
        deadline = next
        return next
    }

    /// What to do at `now`; call it when the timer armed at `deadline` fires (or later). Sets `deadline`.
    public mutating func check(at now: Double) -> Decision {
        // Compared as `nextCheck()` computes its times, so a check at exactly `deadline` is never "not yet".
        var decision = Decision.none
        if pingSentAt != nil {
            if now >= nextCheck() { decision = .deadPeer }
        } else if now >= lastReceived + pingInterval {
            pingSentAt = now
            decision = .sendPing
        }
        deadline = nextCheck()
        return decision
    }

    /// The next time `check` can return something other than `.none`.
    public func nextCheck() -> Double {
        guard let sentAt = pingSentAt else { return lastReceived + pingInterval }
        return max(lastReceived + deadPeerTimeout, sentAt + deadPeerTimeout - pingInterval)
    }
}

/// Keepalive and dead-peer detection as a pure function of time (XEP-0199 §4, ccs-protocol.md §5).
///
/// Times are seconds on a monotonic clock the driver supplies. When nothing has arrived for
/// `pingInterval` seconds, `check` asks for one ping; when nothing has arrived for `deadPeerTimeout`
/// seconds, the peer is dead. Any inbound byte counts as life, so ping replies need no matching.
public struct Keepalive: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        case none
        case sendPing
        case deadPeer
    }

    /// Seconds of inbound silence before we send a ping. Default 30.
    public var pingInterval: Double
    /// Seconds of inbound silence after which the connection is dead. Default 90; must exceed `pingInterval`.
    public var deadPeerTimeout: Double
    private var lastReceived: Double
    private var pingedSinceReceive = false

    public init(pingInterval: Double = 30, deadPeerTimeout: Double = 90, now: Double) {
        precondition(deadPeerTimeout > pingInterval, "deadPeerTimeout must exceed pingInterval")
        self.pingInterval = pingInterval
        self.deadPeerTimeout = deadPeerTimeout
        self.lastReceived = now
    }

    /// Bytes arrived from the peer.
    public mutating func received(at now: Double) {
        lastReceived = now
        pingedSinceReceive = false
    }

    /// What to do now; call it at `nextCheck()` or later.
    public mutating func check(at now: Double) -> Decision {
        let silence = now - lastReceived
        if silence >= deadPeerTimeout { return .deadPeer }
        if silence >= pingInterval && !pingedSinceReceive {
            pingedSinceReceive = true
            return .sendPing
        }
        return .none
    }

    /// The next time `check` can return something other than `.none`.
    public func nextCheck() -> Double {
        pingedSinceReceive ? lastReceived + deadPeerTimeout : lastReceived + pingInterval
    }
}

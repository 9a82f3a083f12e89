/// The per-connection flow-control rule in one place: at most `capacity` downstream messages sent and
/// not yet acked or nacked (ccs-protocol.md §5). Resent messages count again. ACKs of upstream
/// messages and receipts are not downstream messages and never pass through here.
public struct FlowWindow: Sendable, Equatable {
    /// CCS's documented maximum of unacked downstream messages per connection.
    public static let maximum = 100

    /// The configured bound, 1…100.
    public let capacity: Int
    /// Messages sent and not yet resolved.
    public private(set) var inFlight = 0

    /// - Precondition: `1 <= capacity <= 100`; configuration validates this first.
    public init(capacity: Int = FlowWindow.maximum) {
        precondition((1...FlowWindow.maximum).contains(capacity), "window \(capacity) outside 1...100")
        self.capacity = capacity
    }

    public var canSend: Bool { inFlight < capacity }
    public var free: Int { capacity - inFlight }

    /// A downstream message went out. Sending with no room is a bug in the caller.
    public mutating func didSend() {
        precondition(canSend, "flow window overrun: \(inFlight)/\(capacity)")
        inFlight += 1
    }

    /// A downstream message was acked or nacked (or its connection ended).
    public mutating func didResolve() {
        precondition(inFlight > 0, "flow window underrun")
        inFlight -= 1
    }
}

/// Remembers which unreadable CCS messages were logged, so that a message CCS redelivers (it was never
/// ACKed, as nothing in it could be recovered) is logged once, not at every redelivery.
///
/// The key is the message_id when one was recovered, else the digest of the `gcm` text. Memory is bounded:
/// at most `capacity` keys are kept, the oldest forgotten first (a forgotten one is logged again once).
public struct UnreadableMessageLog: Sendable {
    /// Keys remembered at most.
    public let capacity: Int
    /// Unreadable messages seen, redeliveries included.
    public private(set) var total = 0
    /// Of `total`, those seen before (not logged).
    public private(set) var repeats = 0
    private var seen: Set<String> = []
    private var ring: [String] = []
    private var head = 0

    public init(capacity: Int = 4096) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
    }

    /// Counts one unreadable message. Returns true the first time its key is seen: log it then.
    public mutating func record(_ error: InboundParseError) -> Bool {
        total += 1
        let key = error.messageID.map { "id:" + $0 } ?? "digest:" + String(error.payloadDigest, radix: 16)
        guard !seen.contains(key) else {
            repeats += 1
            return false
        }
        seen.insert(key)
        if ring.count < capacity {
            ring.append(key)
        } else {
            seen.remove(ring[head])
            ring[head] = key
            head = (head + 1) % capacity
        }
        return true
    }
}

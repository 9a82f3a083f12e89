/// Remembers upstream message_ids for a while so that a redelivered message is ACKed again but handed
/// over only once (ccs-protocol.md §3: "Expect duplicates: deduplicate by message_id per sender ID").
///
/// Entries live `window` seconds; at most `capacity` entries and `maxBytes` bytes of message_ids are kept
/// (oldest dropped first), so memory is bounded whatever the peer sends, long ids included.
public struct UpstreamDeduplicator: Sendable {
    /// Seconds a message_id is remembered. Default 600.
    public let window: Double
    /// The most message_ids remembered. Default 100,000.
    public let capacity: Int
    /// The most UTF-8 bytes of message_ids remembered. Default 16 MiB.
    public let maxBytes: Int
    private var bytes = 0
    private var seenAt: [String: Double] = [:]
    private var order = FIFO<(id: String, at: Double)>()

    public init(window: Double = 600, capacity: Int = 100_000, maxBytes: Int = 16 << 20) {
        self.window = window
        self.capacity = max(1, capacity)
        self.maxBytes = max(1, maxBytes)
    }

    /// Records `messageID` at `now`; returns true when it is new (hand it over), false for a duplicate.
    public mutating func firstSighting(of messageID: String, now: Double) -> Bool {
        evict(now: now)
        if seenAt[messageID] != nil { return false }
        seenAt[messageID] = now
        order.append((messageID, now))
        bytes += messageID.utf8.count
        while seenAt.count > capacity || (bytes > maxBytes && seenAt.count > 1) { dropOldest() }
        return true
    }

    public var count: Int { seenAt.count }

    private mutating func evict(now: Double) {
        while let oldest = order.first, now - oldest.at >= window { dropOldest() }
    }

    private mutating func dropOldest() {
        guard let entry = order.popFirst() else { return }
        if seenAt[entry.id] == entry.at {
            seenAt[entry.id] = nil
            bytes -= entry.id.utf8.count
        }
    }
}

/// A downstream message accepted at intake, as the dispatcher tracks it until its final outcome.
///
/// `json` is the legacy XMPP JSON (ccs-protocol.md §3), serialized once at intake with its message_id;
/// every send reuses it unchanged, so a resend carries the same message_id.
public struct MessageRecord: Sendable, Equatable {
    public let messageID: String
    /// The JSON object text placed inside `<gcm>`.
    public let json: String
    /// The target as written (`to` value, or the condition), for events.
    public let to: String
    /// The key that RATE_EXCEEDED backs off: the token, or the topic / condition (§4).
    public let rateKey: String
    /// When intake accepted it: seconds on the dispatcher's monotonic clock.
    public let acceptedAt: Double
    /// Seconds; 0 = now or never (§3).
    public let timeToLive: Int
    /// Attempts that count toward the limit (a drain or a lost connection does not count).
    public var attempts = 0
    /// How many times it went on the wire, resends included.
    public var sends = 0
    /// The latest retryable error, for the final event when attempts run out.
    public var lastError: String?

    public init(messageID: String, json: String, to: String, rateKey: String, acceptedAt: Double, timeToLive: Int) {
        self.messageID = messageID
        self.json = json
        self.to = to
        self.rateKey = rateKey
        self.acceptedAt = acceptedAt
        self.timeToLive = timeToLive
    }

    /// Grace in seconds for a `time_to_live: 0` message to get its one immediate try.
    public static let zeroTTLGrace = 1.0

    /// True when the message must not go on the wire again (§4): its time_to_live has run out since it
    /// was accepted. A `time_to_live: 0` message ("now or never") gets one try, within `zeroTTLGrace`
    /// seconds of intake, and is never resent.
    public func isExpired(now: Double) -> Bool {
        if timeToLive == 0 { return sends > 0 || now - acceptedAt > MessageRecord.zeroTTLGrace }
        return now - acceptedAt >= Double(timeToLive)
    }

    /// The time at which `isExpired` turns true if the message is not sent before.
    public var expiresAt: Double {
        acceptedAt + (timeToLive == 0 ? MessageRecord.zeroTTLGrace : Double(timeToLive))
    }
}

/// Where accepted downstream messages live until they are final: the seam for a durable store.
///
/// The in-memory store is the default; a later SQLite store (and a store shared by several ccsd hosts)
/// implements the same calls. The dispatcher keeps its scheduling (ready order, retry times) in memory
/// and rebuilds it from `all()` after a restart.
public protocol MessageStore: Sendable {
    /// Adds an accepted message. A message_id that is already stored is refused with `false`.
    mutating func insert(_ record: MessageRecord) -> Bool
    /// Replaces the stored copy (attempt counters changed).
    mutating func update(_ record: MessageRecord)
    /// Removes a message that reached its final outcome.
    @discardableResult mutating func remove(_ messageID: String) -> MessageRecord?
    func record(_ messageID: String) -> MessageRecord?
    /// How many messages are not final.
    var count: Int { get }
}

/// The default store: a dictionary. Nothing survives a restart.
public struct InMemoryMessageStore: MessageStore {
    private var records: [String: MessageRecord] = [:]

    public init() {}

    public mutating func insert(_ record: MessageRecord) -> Bool {
        guard records[record.messageID] == nil else { return false }
        records[record.messageID] = record
        return true
    }

    public mutating func update(_ record: MessageRecord) { records[record.messageID] = record }

    @discardableResult
    public mutating func remove(_ messageID: String) -> MessageRecord? { records.removeValue(forKey: messageID) }

    public func record(_ messageID: String) -> MessageRecord? { records[messageID] }

    public var count: Int { records.count }
}

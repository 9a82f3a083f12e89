/// A downstream message accepted at intake, as the dispatcher tracks it until its final outcome.
///
/// `json` is the legacy XMPP JSON (ccs-protocol.md §3), serialized once at intake with its message_id;
/// every send reuses it unchanged, so a resend carries the same message_id.
public struct MessageRecord: Sendable, Equatable {
    /// What never changes after intake, shared by every copy: a record travels through several actions,
    /// queues and the store per message, and a copy then costs one reference, not one per field.
    private final class Fixed: Sendable {
        let messageID: String
        /// `SlotIndex.hash(messageID)`: the live table, a store batch's progress and the memory store file
        /// the message under it, so its message_id is hashed once on its way in, not once per table.
        let messageIDHash: UInt32
        let jsonUTF8: [UInt8]
        let stanza: [UInt8]
        let to: String
        let rateKey: String
        let acceptedAt: Double
        let acceptedAtUnixMillis: Int64
        let timeToLive: Int

        init(messageID: String, jsonUTF8: [UInt8], stanza: [UInt8], to: String, rateKey: String, acceptedAt: Double,
             acceptedAtUnixMillis: Int64, timeToLive: Int) {
            self.messageID = messageID
            messageIDHash = SlotIndex.hash(messageID)
            self.jsonUTF8 = jsonUTF8
            self.stanza = stanza
            self.to = to
            self.rateKey = rateKey
            self.acceptedAt = acceptedAt
            self.acceptedAtUnixMillis = acceptedAtUnixMillis
            self.timeToLive = timeToLive
        }
    }

    private let fixed: Fixed

    public var messageID: String { fixed.messageID }
    /// `SlotIndex.hash(messageID)`, computed once when the record is made (this process's seeded hash).
    public var messageIDHash: UInt32 { fixed.messageIDHash }
    /// The JSON object text placed inside `<gcm>`: made from `jsonUTF8` on each read. Kept as bytes, since
    /// on the per-message path only a durable store's insert reads it as text (a `String` made at intake
    /// cost about 500 instructions per message, for nothing with the memory store).
    public var json: String { String(decoding: fixed.jsonUTF8, as: UTF8.self) }
    /// `json` as UTF-8.
    public var jsonUTF8: [UInt8] { fixed.jsonUTF8 }
    /// The whole downstream stanza as UTF-8 (`CCSStanza.downstream(messageID:json:)`): escaped and framed
    /// once, when the record is made, and written as is on every send and resend.
    public var stanza: [UInt8] { fixed.stanza }
    /// The target as written (`to` value, or the condition), for events.
    public var to: String { fixed.to }
    /// The key that RATE_EXCEEDED backs off: the token, or the topic / condition (§4).
    public var rateKey: String { fixed.rateKey }
    /// When intake accepted it: seconds on the dispatcher's monotonic clock. After a restart the driver
    /// derives it from `acceptedAtUnixMillis` (now − (wall clock now − acceptedAtUnixMillis)), so the
    /// time_to_live clock keeps running across the restart.
    public var acceptedAt: Double { fixed.acceptedAt }
    /// When intake accepted it: milliseconds since 1970-01-01 UTC (wall clock). The time_to_live clock
    /// across restarts; stored with the message.
    public var acceptedAtUnixMillis: Int64 { fixed.acceptedAtUnixMillis }
    /// Seconds; 0 = now or never (§3).
    public var timeToLive: Int { fixed.timeToLive }
    /// Attempts that count toward the limit (a drain or a lost connection does not count).
    public var attempts = 0
    /// How many times it went on the wire, resends included.
    public var sends = 0
    /// The latest retryable error, for the final event when attempts run out.
    public var lastError: String?

    public init(messageID: String, json: String, to: String, rateKey: String, acceptedAt: Double, acceptedAtUnixMillis: Int64,
                timeToLive: Int, attempts: Int = 0, sends: Int = 0, lastError: String? = nil) {
        self.fixed = Fixed(messageID: messageID, jsonUTF8: Array(json.utf8), stanza: CCSStanza.downstreamUTF8(messageID: messageID, json: json),
                           to: to, rateKey: rateKey, acceptedAt: acceptedAt, acceptedAtUnixMillis: acceptedAtUnixMillis,
                           timeToLive: timeToLive)
        self.attempts = attempts
        self.sends = sends
        self.lastError = lastError
    }

    /// A new record from the JSON's UTF-8 bytes (valid UTF-8, e.g. `DownstreamMessage.jsonUTF8()`): the stanza
    /// is escaped from them, with no detour through the `String`.
    public init(messageID: String, jsonUTF8: [UInt8], to: String, rateKey: String, acceptedAt: Double, acceptedAtUnixMillis: Int64,
                timeToLive: Int) {
        let stanza = jsonUTF8.withUnsafeBufferPointer { CCSStanza.downstreamUTF8(messageID: messageID, jsonUTF8: $0) }
        self.fixed = Fixed(messageID: messageID, jsonUTF8: jsonUTF8, stanza: stanza, to: to,
                           rateKey: rateKey, acceptedAt: acceptedAt, acceptedAtUnixMillis: acceptedAtUnixMillis,
                           timeToLive: timeToLive)
    }

    /// Equal when every field is (`stanza` follows from `messageID` and `json`).
    public static func == (lhs: MessageRecord, rhs: MessageRecord) -> Bool {
        lhs.attempts == rhs.attempts && lhs.sends == rhs.sends && lhs.lastError == rhs.lastError
            && (lhs.fixed === rhs.fixed
                || (lhs.messageID == rhs.messageID && lhs.json == rhs.json && lhs.to == rhs.to && lhs.rateKey == rhs.rateKey
                    && lhs.acceptedAt == rhs.acceptedAt && lhs.acceptedAtUnixMillis == rhs.acceptedAtUnixMillis
                    && lhs.timeToLive == rhs.timeToLive))
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

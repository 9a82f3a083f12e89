/// A downstream message accepted at intake, as the dispatcher tracks it until its final outcome.
///
/// `json` is the legacy XMPP JSON (ccs-protocol.md §3), serialized once at intake with its message_id;
/// every send reuses it unchanged, so a resend carries the same message_id.
public struct MessageRecord: Sendable, Equatable {
    /// What never changes after intake, shared by every copy: a record travels through several actions,
    /// queues and the store per message, and a copy then costs one reference, not one per field.
    fileprivate struct FixedFields {
        let messageID: String
        /// `SlotIndex.hash(messageID)`: the live table, a store batch's progress and the memory store file
        /// the message under it, so its message_id is hashed once on its way in, not once per table.
        let messageIDHash: UInt32
        let jsonUTF8: [UInt8]
        let to: String
        let rateKey: String
        let acceptedAt: Double
        let acceptedAtUnixMillis: Int64
        let timeToLive: Int
        /// How many bytes of the object's tail are the stanza.
        var stanzaCount = 0
    }

    /// The fixed fields, with the stanza's bytes in the same allocation after them (`ManagedBuffer`'s tail).
    /// A stanza of its own was one more allocation per message, and a `[UInt8]` made with
    /// `init(unsafeUninitializedCapacity:)` went through the standard library's unspecialized buffer
    /// allocation, which looks up the array's generic metadata at run time: about 700 instructions per
    /// message with the free.
    fileprivate final class Fixed: ManagedBuffer<FixedFields, UInt8> {
        /// A new object holding `fields` and the downstream stanza of `messageID` and `json`
        /// (`CCSStanza.writeDownstream`), written straight into its tail.
        static func make(_ fields: consuming FixedFields, json: UnsafeBufferPointer<UInt8>) -> Fixed {
            let capacity = CCSStanza.downstreamCapacity(messageID: fields.messageID, jsonCount: json.count)
            let fixed = empty(capacity)
            // Moved in: the header made by `create`'s closure would be a copy (a retain of each string and
            // of the JSON, released again when `fields` ends).
            fixed.fields.pointee = consume fields
            let written = fixed.withUnsafeMutablePointers { fields, tail in
                CCSStanza.writeDownstream(messageID: fields.pointee.messageID, jsonUTF8: json,
                                          to: UnsafeMutableBufferPointer(start: tail, count: capacity))
            }
            if let written {
                fixed.fields.pointee.stanzaCount = written
                return fixed
            }
            // Escapes that need more room than the estimate left: built by appending, then copied in.
            let stanza = CCSStanza.downstreamUTF8(messageID: fixed.fields.pointee.messageID, jsonUTF8: json)
            let large = empty(stanza.count)
            swap(&large.fields.pointee, &fixed.fields.pointee)
            large.withUnsafeMutablePointers { fields, tail in
                stanza.withUnsafeBufferPointer { tail.initialize(from: $0.baseAddress!, count: $0.count) }
                fields.pointee.stanzaCount = stanza.count
            }
            return large
        }

        /// A new object with room for `capacity` bytes of stanza and empty fields (no allocation of their own).
        private static func empty(_ capacity: Int) -> Fixed {
            let made = Fixed.create(minimumCapacity: capacity) { _ in
                FixedFields(messageID: "", messageIDHash: 0, jsonUTF8: [], to: "", rateKey: "", acceptedAt: 0,
                            acceptedAtUnixMillis: 0, timeToLive: 0)
            }
            return unsafeDowncast(made, to: Fixed.self)
        }

        /// The fields, read through the header's address: `header` is a class's stored property, and each
        /// read of it paid a runtime exclusivity check (about 77 instructions; a record's fields are read
        /// about 15 times per message). Nothing writes them once the record exists.
        @inline(__always)
        var fields: UnsafeMutablePointer<FixedFields> { withUnsafeMutablePointerToHeader { $0 } }

        /// The stanza's bytes, for the duration of `body`.
        @inline(__always)
        func withStanza<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try withUnsafeMutablePointers { fields, tail in
                try body(UnsafeRawBufferPointer(start: tail, count: fields.pointee.stanzaCount))
            }
        }
    }

    // Immutable once made (its tail is written before the record exists), so shared across threads as a
    // `let` of a value type; the standard library marks `ManagedBuffer` itself as not `Sendable`.
    nonisolated(unsafe) private let fixed: Fixed

    public var messageID: String { fixed.fields.pointee.messageID }
    /// `SlotIndex.hash(messageID)`, computed once when the record is made (this process's seeded hash).
    public var messageIDHash: UInt32 { fixed.fields.pointee.messageIDHash }
    /// The JSON object text placed inside `<gcm>`: made from `jsonUTF8` on each read. Kept as bytes, since
    /// on the per-message path only a durable store's insert reads it as text (a `String` made at intake
    /// cost about 500 instructions per message, for nothing with the memory store).
    public var json: String { String(decoding: fixed.fields.pointee.jsonUTF8, as: UTF8.self) }
    /// `json` as UTF-8.
    public var jsonUTF8: [UInt8] { fixed.fields.pointee.jsonUTF8 }
    /// The whole downstream stanza as UTF-8 (`CCSStanza.downstream(messageID:json:)`): escaped and framed
    /// once, when the record is made, and written as is on every send and resend (`withStanza`); this
    /// property copies it into an array.
    public var stanza: [UInt8] { withStanza { Array($0) } }
    /// Calls `body` with the stanza's bytes (`stanza`, without a copy), valid only inside `body`.
    @inline(__always)
    public func withStanza<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try fixed.withStanza(body) }
    /// The target as written (`to` value, or the condition), for events.
    public var to: String { fixed.fields.pointee.to }
    /// The key that RATE_EXCEEDED backs off: the token, or the topic / condition (§4).
    public var rateKey: String { fixed.fields.pointee.rateKey }
    /// When intake accepted it: seconds on the dispatcher's monotonic clock. After a restart the driver
    /// derives it from `acceptedAtUnixMillis` (now − (wall clock now − acceptedAtUnixMillis)), so the
    /// time_to_live clock keeps running across the restart.
    public var acceptedAt: Double { fixed.fields.pointee.acceptedAt }
    /// When intake accepted it: milliseconds since 1970-01-01 UTC (wall clock). The time_to_live clock
    /// across restarts; stored with the message.
    public var acceptedAtUnixMillis: Int64 { fixed.fields.pointee.acceptedAtUnixMillis }
    /// Seconds; 0 = now or never (§3).
    public var timeToLive: Int { fixed.fields.pointee.timeToLive }
    /// Attempts that count toward the limit (a drain or a lost connection does not count).
    public var attempts = 0
    /// How many times it went on the wire, resends included.
    public var sends = 0
    /// The latest retryable error, for the final event when attempts run out.
    public var lastError: String?

    public init(messageID: String, json: String, to: String, rateKey: String, acceptedAt: Double, acceptedAtUnixMillis: Int64,
                timeToLive: Int, attempts: Int = 0, sends: Int = 0, lastError: String? = nil) {
        self.init(messageID: messageID, jsonUTF8: Array(json.utf8), to: to, rateKey: rateKey, acceptedAt: acceptedAt,
                  acceptedAtUnixMillis: acceptedAtUnixMillis, timeToLive: timeToLive)
        self.attempts = attempts
        self.sends = sends
        self.lastError = lastError
    }

    /// A new record from the JSON's UTF-8 bytes (valid UTF-8, e.g. `DownstreamMessage.jsonUTF8()`): the stanza
    /// is escaped from them, with no detour through the `String`.
    public init(messageID: String, jsonUTF8: [UInt8], to: String, rateKey: String, acceptedAt: Double, acceptedAtUnixMillis: Int64,
                timeToLive: Int) {
        let fields = FixedFields(messageID: messageID, messageIDHash: SlotIndex.hash(messageID), jsonUTF8: jsonUTF8,
                                 to: to, rateKey: rateKey, acceptedAt: acceptedAt,
                                 acceptedAtUnixMillis: acceptedAtUnixMillis, timeToLive: timeToLive)
        self.fixed = jsonUTF8.withUnsafeBufferPointer { Fixed.make(fields, json: $0) }
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

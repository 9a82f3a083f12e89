import XMLStream

/// An event's JSON object text, without `seq` and `time`: what the journal keeps, what a store writes and
/// what the events file gets (with `seq` and `time`).
///
/// The two events every downstream message has, `accepted` and a plain `acked`, are kept as their
/// message_id and target (shared with the message's record, nothing copied) and written out only when read:
/// the events file's line is written from them straight into its buffer (`write(to:)`), and a `String` is
/// made only where one is asked for (`string`: a durable store's insert, the HTTP event feed, the stored
/// outcome of a resubmitted final message). Before, each event was a `String` of its own, made, kept for a
/// commit and freed: about 1,800 instructions per message round trip. Any other event is its `String`.
///
/// Two texts are equal when their `string`s are, whichever way each is kept.
public struct EventText: Sendable, Equatable, CustomStringConvertible {
    @usableFromInline enum Kind: UInt8, Sendable {
        /// `first` is the text.
        case string
        /// `{"event":"accepted","message_id":"FIRST"}`; FIRST needs no escape in JSON.
        case accepted
        /// `{"event":"acked","message_id":"FIRST","to":"SECOND"}`; neither needs an escape in JSON.
        case acked
    }

    // Two strings and a tag rather than an enum with payloads: a text is copied about six times between
    // the daemon, the store's journal and the commit's result, and an enum's copy and destruction are an
    // outlined switch each (about 60 instructions), where these fields cost two retains.
    @usableFromInline let kind: Kind
    @usableFromInline let first: String
    private let second: String

    /// The text as it is.
    public init(_ string: String) {
        kind = .string
        first = string
        second = ""
    }

    private init(_ kind: Kind, _ first: String, _ second: String) {
        self.kind = kind
        self.first = first
        self.second = second
    }

    /// `{"event":"accepted","message_id":"<messageID>"}`, or nil when `messageID` needs an escape in JSON
    /// (then the general event writer makes the text).
    public static func accepted(messageID: String) -> EventText? {
        guard isPlain(messageID) else { return nil }
        return EventText(.accepted, messageID, "")
    }

    /// `{"event":"acked","message_id":"<messageID>","to":"<to>"}`, or nil when either needs an escape in JSON.
    public static func acked(messageID: String, to: String) -> EventText? {
        guard isPlain(messageID), isPlain(to) else { return nil }
        return EventText(.acked, messageID, to)
    }

    /// True when every byte of `text` is ASCII at or above 0x20 other than `"` and `\`: written between
    /// quotes as it is, it is the JSON string `JSONValue.writeString` writes.
    private static func isPlain(_ text: String) -> Bool {
        // The contiguous view of a native string (a small one is spilled to the stack) without `withUTF8`'s
        // copy of the string into a `var`.
        if let plain = text.utf8.withContiguousStorageIfAvailable(ByteScan.isPlainJSONText) { return plain }
        var text = text
        return text.withUTF8(ByteScan.isPlainJSONText)
    }

    private static let acceptedHead: StaticString = "{\"event\":\"accepted\",\"message_id\":\""
    private static let ackedHead: StaticString = "{\"event\":\"acked\",\"message_id\":\""
    private static let ackedMiddle: StaticString = "\",\"to\":\""
    private static let tail: StaticString = "\"}"

    /// True for the two plain events kept as pieces (`accepted(messageID:)`, `acked(messageID:to:)`): an
    /// object of at least one member whose last byte is its closing `}`.
    public var isPlainEvent: Bool {
        kind != .string
    }

    /// The text as a `String` (made now for the two plain events).
    public var string: String {
        if kind == .string { return first }
        return String(unsafeUninitializedCapacity: utf8Count) { buffer in write(to: buffer.baseAddress!) }
    }

    public var description: String { string }

    /// Its length in UTF-8 bytes.
    public var utf8Count: Int {
        switch kind {
        case .string:
            first.utf8.count
        case .accepted:
            Self.acceptedHead.utf8CodeUnitCount + first.utf8.count + Self.tail.utf8CodeUnitCount
        case .acked:
            Self.ackedHead.utf8CodeUnitCount + first.utf8.count + Self.ackedMiddle.utf8CodeUnitCount
                + second.utf8.count + Self.tail.utf8CodeUnitCount
        }
    }

    /// Calls `body` with the text's UTF-8 bytes, valid only inside `body`: a `String`'s own storage, or the two
    /// plain events written from their pieces into a temporary buffer (on the stack when small), so no
    /// `String` is made for them (a durable store's journal and its final update; making one cost about 1,200
    /// instructions per event, with the free). Inlinable, so that it is specialized where it is called.
    @inlinable
    public func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if kind == .string {
            if let result = first.utf8.withContiguousStorageIfAvailable(body) { return result }
            var text = first
            return text.withUTF8(body)
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: utf8Count) { buffer in
            body(UnsafeBufferPointer(start: buffer.baseAddress, count: write(to: buffer.baseAddress!)))
        }
    }

    /// Writes the text's UTF-8 bytes at `out`, which has room for `utf8Count` of them; returns how many it wrote.
    public func write(to out: UnsafeMutablePointer<UInt8>) -> Int {
        var at = out
        switch kind {
        case .string:
            Self.put(first, at: &at)
        case .accepted:
            Self.put(Self.acceptedHead, at: &at)
            Self.put(first, at: &at)
            Self.put(Self.tail, at: &at)
        case .acked:
            Self.put(Self.ackedHead, at: &at)
            Self.put(first, at: &at)
            Self.put(Self.ackedMiddle, at: &at)
            Self.put(second, at: &at)
            Self.put(Self.tail, at: &at)
        }
        return at - out
    }

    @inline(__always)
    private static func put(_ text: StaticString, at: inout UnsafeMutablePointer<UInt8>) {
        at.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        at += text.utf8CodeUnitCount
    }

    @inline(__always)
    private static func put(_ text: String, at: inout UnsafeMutablePointer<UInt8>) {
        func copy(_ bytes: UnsafeBufferPointer<UInt8>, to at: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
            guard let base = bytes.baseAddress else { return at }
            at.update(from: base, count: bytes.count)
            return at + bytes.count
        }
        let start = at
        if let end = text.utf8.withContiguousStorageIfAvailable({ copy($0, to: start) }) {
            at = end
        } else {
            var text = text
            at = text.withUTF8 { copy($0, to: start) }
        }
    }

    public static func == (lhs: EventText, rhs: EventText) -> Bool {
        lhs.kind == rhs.kind ? lhs.first == rhs.first && lhs.second == rhs.second : lhs.string == rhs.string
    }
}

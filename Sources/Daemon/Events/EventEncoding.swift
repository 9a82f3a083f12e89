import CCS
import XMLStream

extension DispatcherEvent {
    /// The event as one JSON object with an `event` field, keys in alphabetical order, then a newline.
    ///
    /// Shapes: `accepted {message_id}`, `rejected {message_id?, field, error, line?, outcome?, retryable?}`
    /// (`retryable` only when true; `outcome` the stored final event object of an already-final message_id),
    /// `acked {message_id, to, registration_id?, success?, failure?, failed_registration_ids?, decode_error?}`,
    /// `nacked {message_id, error, description, final, invalid_token, success?, failure?,
    /// failed_registration_ids?, decode_error?}` (device-group members as the server wrote them, numbers digit
    /// for digit; `decode_error` names a number no 64-bit float holds, written `null`: see `GroupOutcome`),
    /// `expired {message_id}`, `upstream {message_id, from, category, data, decode_error?, raw?}`,
    /// `receipt {message_id, original_message_id, status, device_registration_id, decode_error?, raw?}`,
    /// `connection {id, endpoint, state, reason?}`. Upstream `data` is written back exactly as received.
    /// `decode_error` (with `raw`, the `gcm` text as received) marks an upstream message or receipt ccsd
    /// could not fully decode but handed over and ACKed anyway (no poison messages): `data` is then `null`,
    /// or holds `null` where a number no Double holds was written.
    /// Written field by field (two events per message pass through here).
    public func jsonLine() -> String { jsonObject() + "\n" }

    /// The event as one JSON object (what `jsonLine()` writes, without the newline): the text the events
    /// journal keeps.
    public func jsonObject() -> String {
        if let text = plainJSONObject() { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160)
        appendJSONObject(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The two events every message has, `accepted` and an `acked` with neither canonical id nor group
    /// counts, when their strings need no escape (`EventLine.isPlain`), as a `String`; nil for any other
    /// event or string. The text is the same as `appendJSONObject(to:)` writes (keys in the same order:
    /// tests compare them).
    func plainJSONObject() -> String? { plainText()?.string }

    /// `plainJSONObject()` kept as its pieces (`EventText.accepted`, `EventText.acked`): the journal and the
    /// events file take it so, and no `String` is made for it on the per-message path.
    func plainText() -> EventText? {
        switch self {
        case .accepted(let messageID):
            EventText.accepted(messageID: messageID)
        case .acked(let messageID, let to, nil, nil):
            EventText.acked(messageID: messageID, to: to)
        default:
            nil
        }
    }

    /// Appends `jsonObject()` as UTF-8 to `out` (the daemon reuses one buffer for every event it journals:
    /// no buffer is made, grown and freed per event).
    public func appendJSONObject(to out: inout [UInt8]) {
        var line = EventLine()
        swap(&line.bytes, &out)
        line.open()
        defer {
            line.close()
            swap(&line.bytes, &out)
        }
        switch self {
        case .accepted(let messageID):
            line.field("event", "accepted")
            line.field("message_id", messageID)
        case .rejected(let messageID, let field, let error, let number, let retryable, let outcome):
            line.field("error", error)
            line.field("event", "rejected")
            line.field("field", field)
            if let number { line.field("line", .int(Int64(number))) }
            if let messageID { line.field("message_id", messageID) }
            if let outcome { line.field("outcome", (try? JSONValue.parse(outcome)) ?? .string(outcome)) }
            if retryable { line.field("retryable", .bool(true)) }
        case .acked(let messageID, let to, let canonical, let group):
            if let error = group?.decodeError { line.field("decode_error", error) }
            line.field("event", "acked")
            if let group {
                line.field("failed_registration_ids", group.failedRegistrationIDs)
                line.field("failure", group.failure)
            }
            line.field("message_id", messageID)
            if let canonical { line.field("registration_id", canonical) }
            if let group { line.field("success", group.success) }
            line.field("to", to)
        case .nacked(let messageID, let error, let description, let final, let invalidToken, let group):
            if let error = group?.decodeError { line.field("decode_error", error) }
            line.field("description", description.map(JSONValue.string) ?? .null)
            line.field("error", error)
            line.field("event", "nacked")
            if let group {
                line.field("failed_registration_ids", group.failedRegistrationIDs)
                line.field("failure", group.failure)
            }
            line.field("final", .bool(final))
            line.field("invalid_token", .bool(invalidToken))
            line.field("message_id", messageID)
            if let group { line.field("success", group.success) }
        case .expired(let messageID):
            line.field("event", "expired")
            line.field("message_id", messageID)
        case .upstream(let upstream):
            line.field("category", upstream.category.map(JSONValue.string) ?? .null)
            line.field("data", upstream.data)
            if let error = upstream.decodeError { line.field("decode_error", error) }
            line.field("event", "upstream")
            line.field("from", upstream.from)
            line.field("message_id", upstream.messageID)
            if let raw = upstream.raw { line.field("raw", raw) }
        case .receipt(let receipt):
            if let error = receipt.decodeError { line.field("decode_error", error) }
            line.field("device_registration_id", receipt.deviceRegistrationID.map(JSONValue.string) ?? .null)
            line.field("event", "receipt")
            line.field("message_id", receipt.messageID)
            line.field("original_message_id", receipt.originalMessageID.map(JSONValue.string) ?? .null)
            if let raw = receipt.raw { line.field("raw", raw) }
            line.field("status", receipt.status.map(JSONValue.string) ?? .null)
        case .connection(let id, let endpoint, let state, let reason):
            line.field("endpoint", endpoint.description)
            line.field("event", "connection")
            line.field("id", .int(Int64(id)))
            if let reason { line.field("reason", reason) }
            line.field("state", state.rawValue)
        }
    }
}

/// Writes one compact JSON object as UTF-8 bytes (no `String` growth) after what `bytes` already holds;
/// callers add keys in the order they want them written.
struct EventLine {
    var bytes: [UInt8] = []
    /// Where the object's `{` is.
    private var start = 0

    mutating func open() {
        start = bytes.count
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func field(_ key: StaticString, _ value: String) {
        separator(key)
        Self.writeString(value, to: &bytes)
    }

    mutating func field(_ key: StaticString, _ value: JSONValue) {
        separator(key)
        value.write(to: &bytes)
    }

    /// Keys are plain ASCII names: written as they are, quoted.
    private mutating func separator(_ key: StaticString) {
        if bytes.count > start + 1 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// `JSONValue.writeString(_:to:)`, with a fast path for the usual message_id, token or name: printable
    /// ASCII without `"` or `\\` is written as it is, between quotes, which is what `writeString` writes
    /// for it. Anything else goes to `writeString` (the one rule for escaping).
    static func writeString(_ value: String, to out: inout [UInt8]) {
        var text = value
        let written = text.withUTF8 { utf8 -> Bool in
            guard isPlain(utf8) else { return false }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: utf8)
            out.append(UInt8(ascii: "\""))
            return true
        }
        if !written { JSONValue.writeString(value, to: &out) }
    }

    /// True when every byte is ASCII at or above 0x20 (0x20…0x7F) other than `"` and `\\`: such text needs no
    /// escape in JSON (`ByteScan.isPlainJSONText`, sixteen bytes at a time); a false answer only means the
    /// slow path.
    static func isPlain(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteScan.isPlainJSONText(utf8)
    }
}

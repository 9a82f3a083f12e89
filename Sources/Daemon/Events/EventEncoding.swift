import CCS

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
        var line = EventLine()
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
        return line.finish()
    }
}

/// Builds one compact JSON object as UTF-8 bytes (no `String` growth); callers add keys in the order they
/// want them written.
private struct EventLine {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    init() { bytes.reserveCapacity(160) }

    mutating func field(_ key: StaticString, _ value: String) {
        separator(key)
        JSONValue.writeString(value, to: &bytes)
    }

    mutating func field(_ key: StaticString, _ value: JSONValue) {
        separator(key)
        value.write(to: &bytes)
    }

    /// Keys are plain ASCII names: written as they are, quoted.
    private mutating func separator(_ key: StaticString) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    consuming func finish() -> String {
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

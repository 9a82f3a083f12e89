import CCS

extension DispatcherEvent {
    /// The event as one JSON object with an `event` field (issue 3 §7, "Outlet").
    ///
    /// Shapes: `accepted {message_id}`, `rejected {message_id?, field, error}`,
    /// `acked {message_id, to, registration_id?, success?, failure?, failed_registration_ids?}`,
    /// `nacked {message_id, error, description, final, invalid_token, failed_registration_ids?}`,
    /// `expired {message_id}`, `upstream {message_id, from, category, data}`,
    /// `receipt {message_id, original_message_id, status, device_registration_id}`,
    /// `connection {id, endpoint, state, reason?}`. Upstream `data` is written back exactly as received.
    public func jsonLine() -> String {
        var fields: [String: JSONValue] = [:]
        let name: String
        switch self {
        case .accepted(let messageID):
            name = "accepted"
            fields["message_id"] = .string(messageID)
        case .rejected(let messageID, let field, let error):
            name = "rejected"
            if let messageID { fields["message_id"] = .string(messageID) }
            fields["field"] = .string(field)
            fields["error"] = .string(error)
        case .acked(let messageID, let to, let canonical, let group):
            name = "acked"
            fields["message_id"] = .string(messageID)
            fields["to"] = .string(to)
            if let canonical { fields["registration_id"] = .string(canonical) }
            group?.add(to: &fields)
        case .nacked(let messageID, let error, let description, let final, let invalidToken, let group):
            name = "nacked"
            fields["message_id"] = .string(messageID)
            fields["error"] = .string(error)
            fields["description"] = description.map(JSONValue.string) ?? .null
            fields["final"] = .bool(final)
            fields["invalid_token"] = .bool(invalidToken)
            group?.add(to: &fields)
        case .expired(let messageID):
            name = "expired"
            fields["message_id"] = .string(messageID)
        case .upstream(let upstream):
            name = "upstream"
            fields["message_id"] = .string(upstream.messageID)
            fields["from"] = .string(upstream.from)
            fields["category"] = upstream.category.map(JSONValue.string) ?? .null
            fields["data"] = upstream.data
        case .receipt(let receipt):
            name = "receipt"
            fields["message_id"] = .string(receipt.messageID)
            fields["original_message_id"] = receipt.originalMessageID.map(JSONValue.string) ?? .null
            fields["status"] = receipt.status.map(JSONValue.string) ?? .null
            fields["device_registration_id"] = receipt.deviceRegistrationID.map(JSONValue.string) ?? .null
        case .connection(let id, let endpoint, let state, let reason):
            name = "connection"
            fields["id"] = .int(Int64(id))
            fields["endpoint"] = .string(endpoint.description)
            fields["state"] = .string(state.rawValue)
            if let reason { fields["reason"] = .string(reason) }
        }
        var line = "{\"event\":"
        JSONValue.writeString(name, to: &line)
        for key in fields.keys.sorted() {
            line += ","
            JSONValue.writeString(key, to: &line)
            line += ":"
            fields[key]!.write(to: &line)
        }
        line += "}\n"
        return line
    }
}

extension GroupOutcome {
    func add(to fields: inout [String: JSONValue]) {
        fields["success"] = .int(Int64(success))
        fields["failure"] = .int(Int64(failure))
        fields["failed_registration_ids"] = .array(failedRegistrationIDs.map(JSONValue.string))
    }
}

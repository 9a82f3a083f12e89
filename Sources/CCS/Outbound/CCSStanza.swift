import XMLStream

/// Outbound CCS stanzas as text (ccs-protocol.md §2–3): the JSON is XML-escaped into `<gcm>`, and the
/// `<message id>` attribute equals the JSON message_id so stanza errors can be correlated.
public enum CCSStanza {
    /// `<message id="ID"><gcm xmlns="google:mobile:data">JSON</gcm></message>`, JSON escaped as text.
    public static func downstream(messageID: String, json: String) -> String {
        var out = "<message id=\""
        out.reserveCapacity(json.utf8.count + messageID.utf8.count + 80)
        XMLWriter.appendEscapedAttribute(messageID, to: &out)
        out += "\"><gcm xmlns=\"google:mobile:data\">"
        XMLWriter.appendEscapedText(json, to: &out)
        out += "</gcm></message>"
        return out
    }

    /// The ACK of an upstream message or receipt: `{"to":FROM,"message_id":ID,"message_type":"ack"}` (§3).
    public static func ack(to: String, messageID: String) -> String {
        var json = "{\"to\":"
        JSONValue.writeString(to, to: &json)
        json += ",\"message_id\":"
        JSONValue.writeString(messageID, to: &json)
        json += ",\"message_type\":\"ack\"}"
        var out = "<message><gcm xmlns=\"google:mobile:data\">"
        XMLWriter.appendEscapedText(json, to: &out)
        out += "</gcm></message>"
        return out
    }
}

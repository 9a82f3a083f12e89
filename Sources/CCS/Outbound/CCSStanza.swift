import XMLStream

/// Outbound CCS stanzas as text (ccs-protocol.md §2–3): the JSON is XML-escaped into `<gcm>`, and every
/// stanza carries an `id` ccsd sets, so a stanza error can be told apart by the stanza it is about:
/// - a downstream message: `id` = its message_id (§2), which is how a stanza error resolves it;
/// - an ACK: `id` = `ackIDPrefix` + the upstream message_id it ACKs. upstream and downstream share one
///   message_id space, so an ACK must never carry a bare message_id as its id: an error about it would
///   then resolve the downstream message of the same id.
public enum CCSStanza {
    /// The prefix of every ACK stanza's `id` (`ccsd-ack:` + the upstream message_id). A stanza error whose
    /// `id` starts with it is about an ACK (`InboundMessage.StanzaError.isAboutAck`).
    public static let ackIDPrefix = "ccsd-ack:"

    /// The `id` of the ACK stanza for upstream message (or receipt) `messageID`.
    public static func ackStanzaID(messageID: String) -> String { ackIDPrefix + messageID }

    /// `<message id="ID"><gcm xmlns="google:mobile:data">JSON</gcm></message>`, JSON escaped as text.
    public static func downstream(messageID: String, json: String) -> String {
        String(decoding: downstreamUTF8(messageID: messageID, json: json), as: UTF8.self)
    }

    /// `downstream(messageID:json:)` as UTF-8 bytes, escaped straight into a byte buffer: what
    /// `MessageRecord.stanza` holds, built once at intake and written as is on every send.
    public static func downstreamUTF8(messageID: String, json: String) -> [UInt8] {
        var json = json
        return json.withUTF8 { downstreamUTF8(messageID: messageID, jsonUTF8: $0) }
    }

    /// `downstreamUTF8(messageID:json:)` from the JSON's UTF-8 bytes (valid UTF-8).
    ///
    /// Written in place (`XMLWriter.writeEscaped`) into one array with room for `escapeRoom` bytes of escapes
    /// beyond the bytes as they are; only a stanza that needs more is built again by appending. Appending
    /// cost about 90 instructions per piece, and a stanza has a dozen pieces when its JSON holds three markup
    /// characters; counting the escapes first would scan the JSON twice, which costs as much.
    public static func downstreamUTF8(messageID: String, jsonUTF8 json: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        let capacity = downstreamCapacity(messageID: messageID, jsonCount: json.count)
        var fits = false
        let stanza = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            guard let written = writeDownstream(messageID: messageID, jsonUTF8: json, to: buffer) else { return }
            count = written
            fits = true
        }
        if fits { return stanza }
        var messageID = messageID
        return messageID.withUTF8 { appendedDownstreamUTF8(id: $0, json: json) }
    }

    /// The room `writeDownstream` needs for a message_id and JSON that need at most `escapeRoom` bytes of
    /// escapes: their bytes as they are, the stanza's markup and `escapeRoom`.
    public static func downstreamCapacity(messageID: String, jsonCount: Int) -> Int {
        messageOpen.utf8CodeUnitCount + messageID.utf8.count + gcmOpen.utf8CodeUnitCount + jsonCount
            + gcmClose.utf8CodeUnitCount + escapeRoom
    }

    /// Writes `downstreamUTF8(messageID:jsonUTF8:)` into `buffer` (uninitialized memory) and returns how many
    /// bytes it wrote; nil, with an unspecified part of `buffer` written, when it does not fit.
    public static func writeDownstream(messageID: String, jsonUTF8 json: UnsafeBufferPointer<UInt8>,
                                       to buffer: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        var messageID = messageID
        return messageID.withUTF8 { id -> Int? in
            guard var written = write(messageOpen, to: buffer, at: 0),
                  let idCount = XMLWriter.writeEscaped(utf8: id, inAttribute: true, to: UnsafeMutableBufferPointer(rebasing: buffer[written...])),
                  let afterID = write(gcmOpen, to: buffer, at: written + idCount) else { return nil }
            written = afterID
            guard let jsonCount = XMLWriter.writeEscaped(utf8: json, inAttribute: false, to: UnsafeMutableBufferPointer(rebasing: buffer[written...])),
                  let end = write(gcmClose, to: buffer, at: written + jsonCount) else { return nil }
            return end
        }
    }

    /// The bytes of escapes a downstream stanza has room for in place (`downstreamUTF8(messageID:jsonUTF8:)`):
    /// eight `&` or ten `<` or `>`, at no more than 32 bytes of spare capacity per stored stanza.
    static var escapeRoom: Int { 32 }

    /// `downstreamUTF8(messageID:jsonUTF8:)` built by appending: for a stanza whose escapes need more room.
    static func appendedDownstreamUTF8(id: UnsafeBufferPointer<UInt8>, json: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count + id.count + 96)
        messageOpen.withUTF8Buffer { out.append(contentsOf: $0) }
        XMLWriter.appendEscapedAttribute(String(decoding: id, as: UTF8.self), to: &out)
        gcmOpen.withUTF8Buffer { out.append(contentsOf: $0) }
        XMLWriter.appendEscapedText(utf8: json, to: &out)
        gcmClose.withUTF8Buffer { out.append(contentsOf: $0) }
        return out
    }

    private static var messageOpen: StaticString { "<message id=\"" }
    private static var gcmOpen: StaticString { "\"><gcm xmlns=\"google:mobile:data\">" }
    private static var gcmClose: StaticString { "</gcm></message>" }

    /// Writes `text` into `buffer` at `offset` and returns the offset after it; nil if it does not fit.
    private static func write(_ text: StaticString, to buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int? {
        let count = text.utf8CodeUnitCount
        guard count <= buffer.count - offset else { return nil }
        (buffer.baseAddress! + offset).initialize(from: text.utf8Start, count: count)
        return offset + count
    }

    /// The ACK of an upstream message or receipt: `<message id="ccsd-ack:ID"><gcm xmlns="google:mobile:data">`
    /// `{"to":FROM,"message_id":ID,"message_type":"ack"}</gcm></message>` (§3).
    public static func ack(to: String, messageID: String) -> String {
        ack(to: to, messageID: UpstreamMessageID(text: messageID))
    }

    /// The ACK of an upstream message or receipt whose message_id may hold unpaired surrogate escapes: its
    /// `message_id` is the JSON literal the server wrote (`UpstreamMessageID.jsonValueText`), escapes and
    /// all, so the server can match it; the stanza `id` uses the decoded text.
    public static func ack(to: String, messageID: UpstreamMessageID) -> String {
        var json = "{\"to\":"
        JSONValue.writeString(to, to: &json)
        json += ",\"message_id\":"
        json += messageID.jsonValueText()
        json += ",\"message_type\":\"ack\"}"
        var out = "<message id=\""
        XMLWriter.appendEscapedAttribute(ackStanzaID(messageID: messageID.text), to: &out)
        out += "\"><gcm xmlns=\"google:mobile:data\">"
        XMLWriter.appendEscapedText(json, to: &out)
        out += "</gcm></message>"
        return out
    }
}

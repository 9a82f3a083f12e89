import CCS
import XMLStream

/// A `<message>` from the client, read as CCS reads it (ccs-protocol.md §2–3).
public enum ClientPayload: Sendable, Equatable {
    /// A downstream message to answer with an ack or nack.
    case downstream(Downstream)
    /// The client's ACK of an upstream message or receipt (`message_type` `ack`). `messageID` is the decoded
    /// message_id, or, when it holds an unpaired surrogate escape, its JSON string literal as the client wrote
    /// it (quotes and escapes): a server matches the id it sent, not its U+FFFD reading.
    case ack(messageID: String)
    /// Anything else with a `message_type` (a client NACK of upstream, which CCS forbids; unknown types).
    case otherType(String)
    /// CCS cannot read it: answer with a stanza error carrying `text` (§3).
    case unreadable(id: String?, echoedPayload: String, text: String)
    /// A `<message>` without a `gcm` child in `google:mobile:data`, or of type error: not CCS traffic.
    case notCCS

    public struct Downstream: Sendable, Equatable {
        public var messageID: String
        /// The `to` (token, notification key, `/topics/…`), or the `condition`; nil when neither is given.
        public var target: String?
        public var deliveryReceiptRequested: Bool
    }

    /// The text of the stanza error for a payload without a message_id, as CCS words it.
    public static let missingMessageIDText = "InvalidJson: JSON_PARSING_ERROR : Missing Required Field: message_id"

    /// The common downstream message read without building the whole object (`JSONFrontDoor.withObject`):
    /// no `message_type`, a non-empty string `message_id`, no `delivery_receipt_requested`. nil for anything
    /// else (then `classify` reads the whole object, with the same result for these).
    static func plainDownstream(_ text: String) -> Downstream? {
        JSONFrontDoor.withObject(text, readPlainDownstream)
    }

    /// `plainDownstream(_:)` over a `gcm` element's text as UTF-8 bytes, untrimmed (the stream parser's
    /// payload, `XMLPayloadShape.ccs`): nil also when the text has XML whitespace to trim (then the stanza
    /// is built and `classify` reads it).
    static func plainDownstream(utf8 text: UnsafeRawBufferPointer) -> Downstream? {
        guard !XMLWhitespace.mayTrim(text) else { return nil }
        return JSONFrontDoor.withObject(utf8: text, readPlainDownstream)
    }

    /// The plain downstream message (`plainDownstream(_:)`) of a stanza the stream parser hands over as its
    /// payload text (`XMLPayloadShape.ccs`, `XMLStreamParser.feed(_:payload:_:)`), when the stanza is in
    /// `jabber:client` (the namespace the negotiation delivers a `message` in): what `classify` gives for the
    /// stanza it would build. nil for anything else, which is then built and classified.
    static func plainDownstream(payload text: UnsafeRawBufferPointer, of parser: XMLStreamParser) -> Downstream? {
        guard parser.payloadStanzaNamespace(is: XMLNamespace.client) else { return nil }
        return plainDownstream(utf8: text)
    }

    private static func readPlainDownstream(_ object: borrowing JSONFrontDoor.ObjectView) -> Downstream? {
        guard !object.contains("message_type"), !object.contains("delivery_receipt_requested"),
              let messageID = object.string("message_id"), !messageID.isEmpty else { return nil }
        return Downstream(messageID: messageID, target: object.string("to") ?? object.string("condition"),
                          deliveryReceiptRequested: false)
    }

    /// Classifies one `<message>` stanza from the client.
    public static func classify(_ stanza: XMLElement) -> ClientPayload {
        guard stanza.attribute("type") != "error", let gcm = stanza.child("gcm", namespace: XMLNamespace.gcm) else {
            return .notCCS
        }
        let id = stanza.attribute("id")
        let text = gcm.text.trimmingXMLWhitespace()
        if let downstream = plainDownstream(text) { return .downstream(downstream) }
        guard let value = try? JSONValue.parse(text), let object = value.objectValue else {
            return .unreadable(id: id, echoedPayload: text, text: "InvalidJson: JSON_PARSING_ERROR : Unexpected character or not a JSON object")
        }
        if let type = object["message_type"] {
            guard let type = type.stringValue else { return .otherType(type.serialized()) }
            if type == "ack", let messageID = object["message_id"]?.stringValue, !messageID.isEmpty {
                return .ack(messageID: JSONTokenScan.unpairedSurrogateLiteral("message_id", in: Array(text.utf8)) ?? messageID)
            }
            return .otherType(type)
        }
        guard let messageID = object["message_id"]?.stringValue, !messageID.isEmpty else {
            return .unreadable(id: id, echoedPayload: text, text: missingMessageIDText)
        }
        return .downstream(Downstream(
            messageID: messageID,
            target: object["to"]?.stringValue ?? object["condition"]?.stringValue,
            deliveryReceiptRequested: object["delivery_receipt_requested"]?.boolValue ?? false))
    }
}

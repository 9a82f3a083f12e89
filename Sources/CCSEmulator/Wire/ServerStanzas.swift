import CCS
import XMLStream

/// What the emulator writes, as text, the way CCS writes it (ccs-protocol.md §1–3, §5).
///
/// Deliberately not ccsd's own writer: features carry the `stream:` prefix, the CONNECTION_DRAINING
/// control and receipts use the prefixed `<data:gcm xmlns:data="google:mobile:data">`, JSON keys come in
/// CCS's order rather than sorted. Every JSON payload is XML-escaped as text (`&`, `<`, `>`).
public enum ServerStanzas {
    /// `<stream:features>` with the SASL mechanisms (RFC 6120 §6.4.1).
    public static func preAuthFeatures(mechanisms: [String]) -> String {
        var out = "<stream:features><mechanisms xmlns=\"\(XMLNamespace.sasl)\">"
        for mechanism in mechanisms {
            out += "<mechanism>"
            XMLWriter.appendEscapedText(mechanism, to: &out)
            out += "</mechanism>"
        }
        return out + "</mechanisms></stream:features>"
    }

    /// `<stream:features>` after SASL: bind and session (ccs-protocol.md §1).
    public static let postAuthFeatures =
        "<stream:features><bind xmlns=\"\(XMLNamespace.bind)\"/><session xmlns=\"\(XMLNamespace.session)\"/></stream:features>"

    /// `<success xmlns="urn:ietf:params:xml:ns:xmpp-sasl"/>`.
    public static let saslSuccess = "<success xmlns=\"\(XMLNamespace.sasl)\"/>"

    /// `<failure xmlns="urn:ietf:params:xml:ns:xmpp-sasl"><CONDITION/></failure>` (RFC 6120 §6.5).
    /// With `text`: `<failure …><CONDITION/><text xml:lang="en">TEXT</text></failure>` (RFC 6120 §6.4.5).
    public static func saslFailure(condition: String, text: String? = nil) -> String {
        var out = "<failure xmlns=\"\(XMLNamespace.sasl)\"><\(condition)/>"
        if let text {
            out += "<text xml:lang=\"en\">"
            XMLWriter.appendEscapedText(text, to: &out)
            out += "</text>"
        }
        return out + "</failure>"
    }

    /// The bind result: `<iq type="result" id="ID"><bind xmlns="…bind"><jid>JID</jid></bind></iq>`.
    public static func bindResult(id: String, jid: String) -> String {
        var out = "<iq type=\"result\" id=\""
        XMLWriter.appendEscapedAttribute(id, to: &out)
        out += "\"><bind xmlns=\"\(XMLNamespace.bind)\"><jid>"
        XMLWriter.appendEscapedText(jid, to: &out)
        return out + "</jid></bind></iq>"
    }

    /// `<iq type="result" id="ID"/>`.
    public static func iqResult(id: String) -> String {
        var out = "<iq type=\"result\" id=\""
        XMLWriter.appendEscapedAttribute(id, to: &out)
        return out + "\"/>"
    }

    /// `<iq type="error" id="ID"><error type="TYPE"><CONDITION xmlns="…stanzas"/></error></iq>` (RFC 6120 §8.3).
    public static func iqError(id: String, condition: String, type: String) -> String {
        var out = "<iq type=\"error\" id=\""
        XMLWriter.appendEscapedAttribute(id, to: &out)
        return out + "\"><error type=\"\(type)\"><\(condition) xmlns=\"\(XMLNamespace.stanzas)\"/></error></iq>"
    }

    /// A XEP-0199 ping from the server: `<iq type="get" id="ID" from="DOMAIN"><ping xmlns="urn:xmpp:ping"/></iq>`.
    public static func ping(id: String, from domain: String) -> String {
        var out = "<iq type=\"get\" id=\""
        XMLWriter.appendEscapedAttribute(id, to: &out)
        out += "\" from=\""
        XMLWriter.appendEscapedAttribute(domain, to: &out)
        return out + "\"><ping xmlns=\"\(XMLNamespace.ping)\"/></iq>"
    }

    /// A CCS payload: `<message><gcm xmlns="google:mobile:data">JSON</gcm></message>`, or with
    /// `prefixed` `<message><data:gcm xmlns:data="google:mobile:data">JSON</data:gcm></message>`.
    public static func message(json: String, prefixed: Bool = false) -> String {
        let open = prefixed ? prefixedOpen : plainOpen
        let close = prefixed ? "</data:gcm></message>" : "</gcm></message>"
        var out = ""
        out.reserveCapacity(open.utf8.count + json.utf8.count + close.utf8.count + 16)
        out += open
        // Always through the escape: besides `&`, `<` and `>`, a CR must go as `&#13;` (a parser reads a raw
        // one as LF, XML 1.0 §2.11) and other non-`Char`s as U+FFFD.
        XMLWriter.appendEscapedText(json, to: &out)
        out += close
        return out
    }

    private static let plainOpen = "<message><gcm xmlns=\"\(XMLNamespace.gcm)\">"
    private static let prefixedOpen = "<message><data:gcm xmlns:data=\"\(XMLNamespace.gcm)\">"

    /// The CONNECTION_DRAINING control message in the prefixed form (ccs-protocol.md §5).
    public static let connectionDraining = message(
        json: #"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#, prefixed: true)

    /// The stanza error for a downstream message CCS cannot read (ccs-protocol.md §3): the original
    /// `id`, the echoed payload, `<error code="400" type="modify"><bad-request/><text>TEXT</text></error>`.
    public static func stanzaError(id: String?, echoedPayload: String, text: String) -> String {
        var out = "<message"
        if let id {
            out += " id=\""
            XMLWriter.appendEscapedAttribute(id, to: &out)
            out += "\""
        }
        out += " type=\"error\"><gcm xmlns=\"\(XMLNamespace.gcm)\">"
        XMLWriter.appendEscapedText(echoedPayload, to: &out)
        out += "</gcm><error code=\"400\" type=\"modify\"><bad-request xmlns=\"\(XMLNamespace.stanzas)\"/>"
        out += "<text xmlns=\"\(XMLNamespace.stanzas)\">"
        XMLWriter.appendEscapedText(text, to: &out)
        return out + "</text></error></message>"
    }
}

/// A JSON object written with its keys in the given order (CCS's order, not sorted).
struct OrderedJSON {
    private var out: String
    private var first = true

    init() {
        out = "{"
        out.reserveCapacity(160)
    }

    mutating func add(_ key: String, _ value: JSONValue) {
        if !first { out += "," }
        first = false
        JSONValue.writeString(key, to: &out)
        out += ":"
        value.write(to: &out)
    }

    mutating func add(_ key: String, _ string: String) { add(key, .string(string)) }

    /// Adds `raw`, which must already be JSON text.
    mutating func add(_ key: String, raw: String) {
        if !first { out += "," }
        first = false
        JSONValue.writeString(key, to: &out)
        out += ":"
        out += raw
    }

    var text: String { out + "}" }
}

/// Writes XMPP stream XML: escaped text and attributes, stanzas, stream headers and stream errors.
///
/// Output is UTF-8 XML 1.0 that `XMLStreamParser` (and any conforming parser) reads back to the same
/// `XMLElement`, with one loss: an element's `text` is written before its children, so text that was
/// interleaved with children (mixed content) comes back joined in front of them.
public enum XMLWriter {
    /// Appends `s` as XML character data (XML 1.0 §2.4): `&` `<` `>` become `&amp;` `&lt;` `&gt;`
    /// (`>` always, so `]]>` can never appear), and `\r` becomes `&#13;` so that end-of-line handling
    /// (XML 1.0 §2.11) does not turn it into `\n`. Characters that are not XML 1.0 `Char`s
    /// (XML 1.0 §2.2: C0 controls other than tab, LF and CR; U+FFFE; U+FFFF) become U+FFFD.
    /// Lone surrogates cannot occur in a Swift `String`.
    public static func appendEscapedText(_ s: String, to out: inout String) {
        appendEscaped(s, inAttribute: false, to: &out)
    }

    /// Appends `s` as the value of a double- or single-quoted attribute (XML 1.0 §2.3 `AttValue`):
    /// as `appendEscapedText`, plus `"` `'` as `&quot;` `&apos;`, and tab, LF and CR as `&#9;` `&#10;`
    /// `&#13;` so that attribute-value normalization (XML 1.0 §3.3.3) keeps them.
    public static func appendEscapedAttribute(_ s: String, to out: inout String) {
        appendEscaped(s, inAttribute: true, to: &out)
    }

    /// Serializes a stanza (or any element) and its subtree.
    ///
    /// `parentNamespace` is the default namespace in scope where the element is written (for stanzas
    /// on a client stream, `jabber:client`, RFC 6120 §4.8.3); an element whose namespace differs from its
    /// parent's gets `xmlns="…"` (`xmlns=""` for no namespace). Attributes in the XML namespace are
    /// written `xml:NAME`; attributes in another namespace get a generated prefix (`ns1` …) declared on
    /// the same element. Element and attribute names are written as given and must be XML names.
    public static func serialize(_ element: XMLElement, parentNamespace: String? = XMLNamespace.client) -> String {
        var out = ""
        append(element, parentNamespace: parentNamespace, to: &out)
        return out
    }

    /// Appends `element` as `serialize(_:parentNamespace:)` would return it.
    public static func append(_ element: XMLElement, parentNamespace: String?, to out: inout String) {
        out.append("<")
        out.append(element.name)
        if element.namespace != parentNamespace {
            out.append(" xmlns=\"")
            appendEscapedAttribute(element.namespace ?? "", to: &out)
            out.append("\"")
        }
        var generatedPrefixes = 0
        for attribute in element.attributes {
            out.append(" ")
            switch attribute.namespace {
            case nil:
                break
            case XMLNamespace.xml?:
                out.append("xml:")
            case let namespace?:
                generatedPrefixes += 1
                let prefix = "ns\(generatedPrefixes)"
                out.append("xmlns:\(prefix)=\"")
                appendEscapedAttribute(namespace, to: &out)
                out.append("\" \(prefix):")
            }
            out.append(attribute.name)
            out.append("=\"")
            appendEscapedAttribute(attribute.value, to: &out)
            out.append("\"")
        }
        if element.children.isEmpty && element.text.isEmpty {
            out.append("/>")
            return
        }
        out.append(">")
        appendEscapedText(element.text, to: &out)
        for child in element.children {
            append(child, parentNamespace: element.namespace, to: &out)
        }
        out.append("</")
        out.append(element.name)
        out.append(">")
    }

    /// An opening stream header (RFC 6120 §4.7):
    /// `[<?xml version='1.0'?>]<stream:stream [to="…"] [from="…"] [id="…"] version="1.0" [xml:lang="…"]
    /// xmlns="jabber:client" xmlns:stream="http://etherx.jabber.org/streams">`.
    /// Clients send `to` (ccs-protocol.md §1: the JID domain, e.g. `gcm.googleapis.com`); a server
    /// (the emulator) sends `from` and `id`. Values are attribute-escaped.
    public static func streamHeader(
        to: String?, from: String? = nil, id: String? = nil, lang: String? = nil,
        defaultNamespace: String = XMLNamespace.client, xmlDeclaration: Bool = false
    ) -> String {
        var out = xmlDeclaration ? "<?xml version='1.0'?>" : ""
        out.append("<stream:stream")
        func attribute(_ name: String, _ value: String?) {
            guard let value else { return }
            out.append(" \(name)=\"")
            appendEscapedAttribute(value, to: &out)
            out.append("\"")
        }
        attribute("to", to)
        attribute("from", from)
        attribute("id", id)
        attribute("version", "1.0")
        attribute("xml:lang", lang)
        attribute("xmlns", defaultNamespace)
        attribute("xmlns:stream", XMLNamespace.stream)
        out.append(">")
        return out
    }

    /// The closing tag of a stream (RFC 6120 §4.4).
    public static let streamFooter = "</stream:stream>"

    /// A complete stream error (RFC 6120 §4.9.2):
    /// `<stream:error><CONDITION xmlns="urn:ietf:params:xml:ns:xmpp-streams"/>[<text xmlns="urn:ietf:params:xml:ns:xmpp-streams">TEXT</text>]</stream:error>`.
    /// `condition` is a §4.9.3 defined condition such as "not-well-formed" (see
    /// `XMLStreamError.streamErrorCondition`); anything that is not lowercase ASCII letters and `-` is
    /// replaced by "undefined-condition" (§4.9.3.21) rather than written as a broken element name.
    /// Send `streamFooter` after it and close the connection (§4.9.1.1).
    public static func streamError(condition: String, text: String?) -> String {
        let isName = !condition.isEmpty
            && condition.utf8.allSatisfy { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "-") }
        var out = "<stream:error><"
        out.append(isName ? condition : "undefined-condition")
        out.append(" xmlns=\"\(XMLNamespace.streams)\"/>")
        if let text {
            out.append("<text xmlns=\"\(XMLNamespace.streams)\">")
            appendEscapedText(text, to: &out)
            out.append("</text>")
        }
        out.append("</stream:error>")
        return out
    }

    // MARK: - Escaping

    /// The byte writer's escaping (XMLWriter+Bytes.swift), appended to a `String`: one rule for both.
    private static func appendEscaped(_ s: String, inAttribute: Bool, to out: inout String) {
        var text = s
        let escaped = text.withUTF8 { bytes -> [UInt8]? in
            var escaped: [UInt8] = []
            appendEscaped(bytes, inAttribute: inAttribute, to: &escaped)
            return escaped.elementsEqual(bytes) ? nil : escaped
        }
        if let escaped {
            out.append(String(decoding: escaped, as: UTF8.self))
        } else {
            out.append(s)
        }
    }
}

import Testing
import XMLStream

@Suite("XML writer")
struct XMLWriterTests {
    private func text(_ s: String) -> String {
        var out = ""
        XMLWriter.appendEscapedText(s, to: &out)
        return out
    }

    private func attribute(_ s: String) -> String {
        var out = ""
        XMLWriter.appendEscapedAttribute(s, to: &out)
        return out
    }

    // MARK: Escaping

    @Test func textEscaping() {
        #expect(text("plain") == "plain")
        #expect(text("a & b < c > d") == "a &amp; b &lt; c &gt; d")
        #expect(text("]]>") == "]]&gt;")
        #expect(text(#"q"a'"#) == #"q"a'"#, "quotes need no escaping in text")
        #expect(text("tab\tlf\ncr\r") == "tab\tlf\ncr&#13;")
        #expect(text("😀é") == "😀é")
        #expect(text("") == "")
    }

    @Test func attributeEscaping() {
        #expect(attribute(#"a&b<c>d"e'f"#) == "a&amp;b&lt;c&gt;d&quot;e&apos;f")
        #expect(attribute("1\t2\n3\r4") == "1&#9;2&#10;3&#13;4")
        #expect(attribute("😀") == "😀")
    }

    @Test func charactersOutsideXMLCharAreReplaced() {
        // XML 1.0 §2.2: no C0 controls but tab, LF, CR; no U+FFFE, U+FFFF.
        #expect(text("a\u{0}b\u{1}c\u{8}d\u{B}e\u{C}f\u{1F}g") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e\u{FFFD}f\u{FFFD}g")
        #expect(text("x\u{FFFE}y\u{FFFF}z") == "x\u{FFFD}y\u{FFFD}z")
        #expect(attribute("\u{0}\u{FFFF}") == "\u{FFFD}\u{FFFD}")
        // Neighbours of the excluded code points are kept.
        #expect(text("\u{FFFD}\u{FFFC}\u{EFBF}\u{10000}\u{7F}") == "\u{FFFD}\u{FFFC}\u{EFBF}\u{10000}\u{7F}")
    }

    @Test func appendKeepsWhatIsAlreadyThere() {
        var out = "<x>"
        XMLWriter.appendEscapedText("&", to: &out)
        XMLWriter.appendEscapedAttribute("'", to: &out)
        #expect(out == "<x>&amp;&apos;")
    }

    // MARK: Serialization

    @Test func ccsDownstreamMessage() {
        let json = #"{"to":"TOKEN","message_id":"m-1","data":{"a":"<&>"}}"#
        let message = XMLElement(
            name: "message", namespace: XMLNamespace.client, attributes: [XMLAttribute(name: "id", value: "m-1")],
            children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
        #expect(XMLWriter.serialize(message)
            == #"<message id="m-1"><gcm xmlns="google:mobile:data">{"to":"TOKEN","message_id":"m-1","data":{"a":"&lt;&amp;&gt;"}}</gcm></message>"#)
    }

    @Test func namespaceDeclarations() {
        let iq = XMLElement(
            name: "iq", namespace: XMLNamespace.client,
            attributes: [XMLAttribute(name: "type", value: "set"), XMLAttribute(name: "lang", namespace: XMLNamespace.xml, value: "en")],
            children: [XMLElement(name: "bind", namespace: XMLNamespace.bind, children: [
                XMLElement(name: "resource", namespace: XMLNamespace.bind, text: "r"),
            ])])
        #expect(XMLWriter.serialize(iq)
            == #"<iq type="set" xml:lang="en"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"><resource>r</resource></bind></iq>"#)
        #expect(XMLWriter.serialize(iq, parentNamespace: nil).hasPrefix(#"<iq xmlns="jabber:client" "#))
        #expect(XMLWriter.serialize(XMLElement(name: "x")) == #"<x xmlns=""/>"#)
        #expect(XMLWriter.serialize(XMLElement(name: "x"), parentNamespace: nil) == "<x/>")
    }

    @Test func namespacedAttributeGetsADeclaredPrefix() throws {
        let element = XMLElement(name: "m", namespace: XMLNamespace.client, attributes: [
            XMLAttribute(name: "k", namespace: "urn:e", value: "v"), XMLAttribute(name: "k", value: "w"),
        ])
        let parsed = try #require(parseStanza(XMLWriter.serialize(element)))
        #expect(parsed == element)
    }

    // MARK: Round trips through the parser

    @Test(arguments: [
        "& < > \" '", "]]>", "<![CDATA[x]]>", "&amp; is not an entity here", "😀🇫🇷𝄞 中文 \u{10FFFF}",
        "tab\there\nnewline\r\ncrlf\rcr", "  leading and trailing  ", #"{"json":"a\"b","n":[1,2]}"#,
    ])
    func textAndAttributesRoundTrip(_ value: String) throws {
        let element = XMLElement(
            name: "message", namespace: XMLNamespace.client,
            attributes: [XMLAttribute(name: "id", value: value), XMLAttribute(name: "lang", namespace: XMLNamespace.xml, value: value)],
            children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: value)])
        let parsed = try #require(parseStanza(XMLWriter.serialize(element)))
        #expect(parsed == element)
    }

    @Test func controlCharactersComeBackAsReplacementCharacters() throws {
        let element = XMLElement(
            name: "message", namespace: XMLNamespace.client, attributes: [XMLAttribute(name: "a", value: "x\u{1}y")],
            text: "a\u{0}b\u{1B}c\u{FFFE}d")
        let parsed = try #require(parseStanza(XMLWriter.serialize(element)), "the output must be well-formed")
        #expect(parsed.text == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d")
        #expect(parsed.attribute("a") == "x\u{FFFD}y")
    }

    @Test func nestedTreeRoundTrips() throws {
        let tree = XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: [XMLAttribute(name: "id", value: "1")], children: [
            XMLElement(name: "query", namespace: "urn:a", children: [
                XMLElement(name: "item", namespace: "urn:a", text: "1"),
                XMLElement(name: "item", namespace: "urn:b", children: [XMLElement(name: "deep", namespace: "urn:b")]),
                XMLElement(name: "none"),
            ]),
        ])
        #expect(parseStanza(XMLWriter.serialize(tree)) == tree)
    }

    // MARK: Stream framing

    @Test func clientStreamHeader() {
        #expect(XMLWriter.streamHeader(to: "gcm.googleapis.com")
            == #"<stream:stream to="gcm.googleapis.com" version="1.0" xmlns="jabber:client" xmlns:stream="http://etherx.jabber.org/streams">"#)
        #expect(XMLWriter.streamHeader(to: "a", xmlDeclaration: true).hasPrefix("<?xml version='1.0'?><stream:stream to=\"a\" "))
    }

    @Test func serverStreamHeaderParsesBack() throws {
        let header = XMLWriter.streamHeader(to: nil, from: "gcm.googleapis.com", id: "a\"b", lang: "en", xmlDeclaration: true)
        let result = feed(header + XMLWriter.streamFooter)
        #expect(result.error == nil)
        guard case .streamStart(let element) = result.events.first else {
            Issue.record("no header: \(result.events)")
            return
        }
        #expect(element.attribute("from") == "gcm.googleapis.com")
        #expect(element.attribute("id") == "a\"b")
        #expect(element.attribute("to") == nil)
        #expect(element.attribute("version") == "1.0")
        #expect(element.attribute("lang", namespace: XMLNamespace.xml) == "en")
        #expect(result.events.last == .streamEnd)
    }

    @Test func streamErrorDocument() throws {
        #expect(XMLWriter.streamError(condition: "policy-violation", text: nil)
            == #"<stream:error><policy-violation xmlns="urn:ietf:params:xml:ns:xmpp-streams"/></stream:error>"#)
        let withText = XMLWriter.streamError(condition: "not-well-formed", text: "bad <xml> & more")
        let parsed = try #require(parseStanza(withText))
        #expect(parsed.is("error", XMLNamespace.stream))
        #expect(parsed.child("not-well-formed", namespace: XMLNamespace.streams) != nil)
        #expect(parsed.child("text", namespace: XMLNamespace.streams)?.text == "bad <xml> & more")
    }

    @Test func streamErrorRefusesAConditionThatIsNotAName() {
        #expect(XMLWriter.streamError(condition: "x/><evil", text: nil).contains("<undefined-condition "))
        #expect(XMLWriter.streamError(condition: "", text: nil).contains("<undefined-condition "))
    }

    @Test func everyParserErrorConditionMakesAWellFormedStreamError() {
        for hostile in hostileCases {
            let condition = hostile.condition
            let document = XMLWriter.streamError(condition: condition, text: "x")
            #expect(document.contains("<\(condition) xmlns="))
            #expect(parseStanza(document) != nil)
        }
    }
}

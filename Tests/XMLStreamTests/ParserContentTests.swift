import Testing
import XMLStream

@Suite("Parser content")
struct ParserContentTests {
    // MARK: Namespaces: (URI, local name), never prefix

    @Test func prefixedAndDefaultNamespacesResolveToTheSameElement() throws {
        let prefixed = try #require(parseStanza("<message><data:gcm xmlns:data='google:mobile:data'>{}</data:gcm></message>"))
        let unprefixed = try #require(parseStanza("<message><gcm xmlns='google:mobile:data'>{}</gcm></message>"))
        #expect(prefixed == unprefixed)
        #expect(prefixed.child("gcm", namespace: XMLNamespace.gcm)?.text == "{}")
        #expect(prefixed.children[0].name == "gcm", "the prefix is not part of the name")
    }

    @Test func streamNamespaceUnderAnyPrefix() throws {
        let str = try #require(parseStanza("<str:features xmlns:str='http://etherx.jabber.org/streams'/>"))
        let stream = try #require(parseStanza("<stream:features/>"))
        let unprefixed = try #require(parseStanza("<features xmlns='http://etherx.jabber.org/streams'/>"))
        #expect(str.is("features", XMLNamespace.stream))
        #expect(str == stream && stream == unprefixed)
    }

    @Test func samePrefixForADifferentNamespaceIsADifferentElement() throws {
        let element = try #require(parseStanza("<message><data:gcm xmlns:data='urn:example:other'/></message>"))
        #expect(element.child("gcm", namespace: XMLNamespace.gcm) == nil)
        #expect(element.children[0].namespace == "urn:example:other")
    }

    @Test func stanzasInheritTheStreamDefaultNamespace() throws {
        let element = try #require(parseStanza("<iq type='result' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>123@gcm.googleapis.com/r</jid></bind></iq>"))
        #expect(element.is("iq", XMLNamespace.client))
        let bind = try #require(element.child("bind", namespace: XMLNamespace.bind))
        #expect(bind.child("jid", namespace: XMLNamespace.bind)?.text == "123@gcm.googleapis.com/r")
    }

    @Test func emptyDefaultNamespaceMeansNoNamespace() throws {
        let element = try #require(parseStanza("<message><x xmlns=''/></message>"))
        #expect(element.children[0].namespace == nil)
    }

    @Test func namespaceURIsAreNotMixedUpAcrossManyStanzas() throws {
        // Exercises the URI cache: the same and different URIs, re-declared and interleaved.
        var input = serverHeader
        for index in 0..<200 {
            input += "<m\(index % 3) xmlns='urn:test:\(index % 70)'><c xmlns='urn:child:\(index)'/></m\(index % 3)>"
        }
        let result = feed(input, chunkSize: 97)
        #expect(result.error == nil)
        try #require(result.stanzas.count == 200)
        for (index, stanza) in result.stanzas.enumerated() {
            #expect(stanza.namespace == "urn:test:\(index % 70)")
            #expect(stanza.children.first?.namespace == "urn:child:\(index)")
        }
    }

    // MARK: Attributes

    @Test func prosodyStyleSingleQuotesAndXmlLang() throws {
        let result = feed("<?xml version='1.0'?><stream:stream xmlns='jabber:client' xml:lang='en' id='abc-1' version='1.0' from='localhost' xmlns:stream='http://etherx.jabber.org/streams'><message xml:lang='en' type='chat' to='a@localhost/r'><body>say &quot;hi&quot; &apos;there&apos;</body></message>", chunkSize: 5)
        #expect(result.error == nil)
        guard case .streamStart(let header) = result.events.first else {
            Issue.record("no header in \(result.events)")
            return
        }
        #expect(header.attribute("lang", namespace: XMLNamespace.xml) == "en")
        #expect(header.attribute("lang") == nil, "xml:lang is in the XML namespace, not unprefixed")
        #expect(header.attributes.map(\.name) == ["lang", "id", "version", "from"], "document order")
        let message = try #require(result.stanzas.first)
        #expect(message.attribute("lang", namespace: XMLNamespace.xml) == "en")
        #expect(message.attribute("to") == "a@localhost/r")
        #expect(message.child("body", namespace: XMLNamespace.client)?.text == #"say "hi" 'there'"#)
    }

    @Test func attributeValuesResolveEntitiesAndCharacterReferences() throws {
        let element = try #require(parseStanza(#"<message id="a&amp;b&lt;c&gt;&quot;d&apos;&#x41;&#66;&#x1F600;" x='"' y="'"/>"#))
        #expect(element.attribute("id") == "a&b<c>\"d'AB😀")
        #expect(element.attribute("x") == "\"")
        #expect(element.attribute("y") == "'")
    }

    @Test func attributeValueNormalization() throws {
        // XML 1.0 §3.3.3: literal tab/LF become spaces, character references survive.
        let element = try #require(parseStanza("<message a='1\t2\n3' b='1&#9;2&#10;3&#13;'/>"))
        #expect(element.attribute("a") == "1 2 3")
        #expect(element.attribute("b") == "1\t2\n3\r")
    }

    @Test func namespacedAttribute() throws {
        let element = try #require(parseStanza("<message xmlns:e='urn:e' e:k='v' k='w'/>"))
        #expect(element.attribute("k", namespace: "urn:e") == "v")
        #expect(element.attribute("k") == "w")
    }

    // MARK: Text

    @Test(arguments: chunkSizes)
    func textJoinsPiecesEntitiesCharRefsAndCDATA(chunkSize: Int?) throws {
        let stanza = "<message><body>  a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#65;&#x42; <![CDATA[<raw & ]] stuff>]]> tail  </body></message>"
        let result = feed(serverHeader + stanza, chunkSize: chunkSize)
        #expect(result.error == nil)
        let body = try #require(result.stanzas.first?.children.first)
        #expect(body.text == #"  a & b <c> "d" 'e' AB <raw & ]] stuff> tail  "#)
    }

    @Test(arguments: chunkSizes)
    func nonBMPCharactersSurviveAnySplit(chunkSize: Int?) throws {
        let text = "😀🇫🇷𝄞 é ü 中文 \u{10FFFF}"
        let result = feed(serverHeader + "<message><body>\(text)</body></message>", chunkSize: chunkSize)
        #expect(result.error == nil)
        #expect(result.stanzas.first?.children.first?.text == text)
    }

    @Test func characterReferenceForANonBMPCharacter() throws {
        let element = try #require(parseStanza("<message><body>&#x1F600;&#128512;</body></message>"))
        #expect(element.children[0].text == "😀😀")
    }

    @Test func mixedContentKeepsTextOnItsOwnElement() throws {
        let element = try #require(parseStanza("<a>x<b>y<c/>z</b>w</a>"))
        #expect(element.text == "xw")
        #expect(element.children[0].text == "yz")
        #expect(element.children[0].children[0] == XMLElement(name: "c", namespace: XMLNamespace.client))
    }

    @Test func longTextArrivesWhole() throws {
        // libxml2 hands text over in many callbacks; they must be joined in order.
        let json = "{\"data\":\"" + String(repeating: "0123456789abcdef", count: 4096) + "\"}"
        for chunkSize in [nil, 1000, 4093] as [Int?] {
            let result = feed(serverHeader + "<message><gcm xmlns='google:mobile:data'>\(json)</gcm></message>", chunkSize: chunkSize)
            #expect(result.error == nil)
            #expect(result.stanzas.first?.children.first?.text == json)
        }
    }

    @Test func whitespaceInsideStanzasIsKept() throws {
        let element = try #require(parseStanza("<message>\n  <body> x </body>\n</message>"))
        #expect(element.text == "\n  \n")
        #expect(element.children[0].text == " x ")
    }

    @Test func crlfIsNormalizedButCharacterReferenceCRIsKept() throws {
        // XML 1.0 §2.11.
        let element = try #require(parseStanza("<body>a\r\nb\rc&#13;</body>"))
        #expect(element.text == "a\nb\nc\r")
    }
}

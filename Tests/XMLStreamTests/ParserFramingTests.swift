import Testing
import XMLStream

/// A realistic CCS conversation as the server writes it: XML declaration, stream header, features with
/// a prefixed `str:` stream namespace, SASL success, then (after restart) messages with prefixed
/// `data:gcm` payloads and whitespace keepalives between stanzas.
private let ccsTranscript = """
    <?xml version='1.0' encoding='UTF-8'?>\(serverHeader)<str:features xmlns:str="http://etherx.jabber.org/streams"><mechanisms xmlns="urn:ietf:params:xml:ns:xmpp-sasl"><mechanism>X-OAUTH2</mechanism><mechanism>X-GOOGLE-TOKEN</mechanism><mechanism>PLAIN</mechanism></mechanisms></str:features>
    <message><data:gcm xmlns:data="google:mobile:data">{"from":"tok-1","message_id":"m-1","message_type":"ack"}</data:gcm></message> \t\r\n <message id=""><data:gcm xmlns:data="google:mobile:data">{"category":"com.example","data":{"text":"a &amp; b &lt;c&gt; \\&quot;q\\&quot; 😀"},"message_id":"u-1","from":"tok-2"}</data:gcm></message>

    <message><data:gcm xmlns:data="google:mobile:data">{"message_type":"control","control_type":"CONNECTION_DRAINING"}</data:gcm></message></stream:stream>
    """

@Suite("Parser framing")
struct ParserFramingTests {
    @Test func transcriptYieldsHeaderFourStanzasAndEnd() throws {
        let result = feed(ccsTranscript)
        #expect(result.error == nil)
        try #require(result.events.count == 6)
        guard case .streamStart(let header) = result.events[0] else {
            Issue.record("first event is \(result.events[0])")
            return
        }
        #expect(header.is("stream", XMLNamespace.stream))
        #expect(header.attribute("from") == "gcm.googleapis.com")
        #expect(header.attribute("id") == "4F2A9C")
        #expect(header.attribute("version") == "1.0")
        #expect(header.children.isEmpty && header.text.isEmpty)
        #expect(!header.attributes.contains { $0.name == "xmlns" || $0.name == "stream" }, "xmlns declarations are not attributes")

        let features = result.stanzas[0]
        #expect(features.is("features", XMLNamespace.stream))
        let mechanisms = try #require(features.child("mechanisms", namespace: XMLNamespace.sasl))
        #expect(mechanisms.children("mechanism", namespace: XMLNamespace.sasl).map(\.text) == ["X-OAUTH2", "X-GOOGLE-TOKEN", "PLAIN"])

        let ack = result.stanzas[1]
        #expect(ack.is("message", XMLNamespace.client))
        #expect(ack.child("gcm", namespace: XMLNamespace.gcm)?.text == #"{"from":"tok-1","message_id":"m-1","message_type":"ack"}"#)

        let upstream = result.stanzas[2]
        #expect(upstream.attribute("id") == "")
        #expect(upstream.child("gcm", namespace: XMLNamespace.gcm)?.text
            == #"{"category":"com.example","data":{"text":"a & b <c> \"q\" 😀"},"message_id":"u-1","from":"tok-2"}"#)

        #expect(result.stanzas[3].child("gcm", namespace: XMLNamespace.gcm)?.text.contains("CONNECTION_DRAINING") == true)
        #expect(result.events.last == .streamEnd)
    }

    @Test("Any chunking yields the same events as one chunk", arguments: chunkSizes)
    func chunkingDoesNotChangeEvents(chunkSize: Int?) {
        let whole = feed(ccsTranscript)
        let chunked = feed(ccsTranscript, chunkSize: chunkSize)
        #expect(chunked.error == nil)
        #expect(chunked.events == whole.events)
        #expect(chunked.events.count == 6)
    }

    @Test func everySplitPointOfAStanzaYieldsTheSameStanza() {
        // Two pieces, cut at every byte: inside tags, the entity, the character reference and the emoji.
        let bytes = Array((serverHeader + "<message to='x'><body>a&amp;b&#x1F600;😀<![CDATA[<]]></body></message>").utf8)
        let expected = feed(bytes).events
        #expect(expected.count == 2)
        for cut in 1..<bytes.count {
            let parser = XMLStreamParser()
            var events: [XMLStreamEvent] = []
            do {
                try parser.feed(Array(bytes[..<cut])) { events.append($0) }
                try parser.feed(Array(bytes[cut...])) { events.append($0) }
            } catch {
                Issue.record("cut at \(cut): \(error)")
            }
            #expect(events == expected, "cut at \(cut)")
        }
    }

    @Test func eventsArriveAsSoonAsTheirLastByteIsFed() throws {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        try parser.feed(serverHeader) { events.append($0) }
        #expect(events.count == 1, "the header is delivered without waiting for more input")
        try parser.feed("<message><body>hi</body></message") { events.append($0) }
        #expect(events.count == 1, "no stanza before its end tag is complete")
        try parser.feed(">") { events.append($0) }
        #expect(events.count == 2)
        try parser.feed("<iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq><r/>") { events.append($0) }
        #expect(events.count == 4, "several stanzas in one chunk")
        try parser.feed("</stream:stream>") { events.append($0) }
        #expect(events.last == .streamEnd)
    }

    @Test func whitespaceKeepalivesBetweenStanzasAreIgnored() throws {
        let result = feed(serverHeader + " \n\t\r\n <a/>\n\n\n<b/>   \n ", chunkSize: 1)
        #expect(result.error == nil)
        #expect(result.stanzas.map(\.name) == ["a", "b"])
        #expect(result.stanzas.allSatisfy { $0.text.isEmpty })
    }

    @Test func xmlDeclarationBeforeHeaderIsAccepted() {
        for declaration in ["<?xml version='1.0'?>", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                            "<?xml version='1.0' encoding='utf-8' standalone='yes'?>"] {
            let result = feed(declaration + serverHeader + "<a/>", chunkSize: 1)
            #expect(result.error == nil, "\(declaration)")
            #expect(result.stanzas.count == 1, "\(declaration)")
        }
    }

    @Test func selfClosingStreamIsStartThenEnd() {
        let result = feed("<stream:stream xmlns:stream='http://etherx.jabber.org/streams'/>")
        #expect(result.error == nil)
        #expect(result.events == [
            .streamStart(XMLElement(name: "stream", namespace: XMLNamespace.stream)), .streamEnd,
        ])
    }

    @Test func resetStartsANewStreamWithAFreshContext() throws {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        try parser.feed(serverHeader + "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>") { events.append($0) }
        #expect(events.count == 2)
        parser.reset()
        // Without the reset this second header (and XML declaration) would be an error in the old document.
        try parser.feed("<?xml version='1.0'?>" + serverHeader + "<str:features xmlns:str='http://etherx.jabber.org/streams'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></str:features>") { events.append($0) }
        #expect(events.count == 4)
        guard case .streamStart = events[2], case .stanza(let features) = events[3] else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(features.child("bind", namespace: XMLNamespace.bind) != nil)
    }

    @Test func aRestartedStreamWithoutResetIsAnError() {
        // What a server sends after SASL success, fed to the old document: the XML declaration is only
        // allowed at the very start of a document.
        let result = feed(serverHeader + "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/><?xml version='1.0'?>" + serverHeader)
        #expect(result.stanzas.count == 1)
        #expect(result.error?.streamErrorCondition == "not-well-formed" || result.error?.streamErrorCondition == "restricted-xml")
    }

    @Test func resetFromInsideTheHandlerParsesTheRestAsTheNewStream() throws {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        let input = serverHeader + "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/><?xml version='1.0'?>"
            + serverHeader + "<features xmlns='http://etherx.jabber.org/streams'/>"
        try parser.feed(input) { event in
            events.append(event)
            if case .stanza(let element) = event, element.name == "success" { parser.reset() }
        }
        #expect(events.count == 4)
        guard events.count == 4, case .streamStart = events[2], case .stanza(let features) = events[3] else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(features.is("features", XMLNamespace.stream))
    }

    @Test func streamEndThenTrailingWhitespaceIsFine() {
        let result = feed(serverHeader + "<a/></stream:stream>\n  \n", chunkSize: 1)
        #expect(result.error == nil)
        #expect(result.events.last == .streamEnd)
    }

    @Test func feedingNothingIsANoOp() throws {
        let parser = XMLStreamParser()
        var count = 0
        try parser.feed([UInt8]()) { _ in count += 1 }
        try parser.feed("") { _ in count += 1 }
        try parser.feed(serverHeader) { _ in count += 1 }
        #expect(count == 1)
    }
}

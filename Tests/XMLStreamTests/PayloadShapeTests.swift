import Testing
import XMLStream

/// The payload shortcut (`feed(_:payload:_:)` with `XMLPayloadShape.ccs`) against the general path (`feed(_:_:)`
/// of a parser without a shape), on every stanza shape a CCS server or a hostile peer may write, at every
/// chunking: the same events in the same order, the same error, and a payload handed over exactly for the
/// stanzas that are `<message>` (no unprefixed `type`) with one `gcm` child in `google:mobile:data` that has
/// no children, with that child's text.
@Suite struct PayloadShapeTests {
    /// What a feed produced, payloads and events in the order they came.
    enum Entry: Equatable {
        case event(XMLStreamEvent)
        case payload(String)
    }

    static let gcm = #"xmlns="google:mobile:data""#

    static let stanzas: [String] = [
        #"<message><gcm xmlns="google:mobile:data">{"from":"t","message_id":"m-1","message_type":"ack"}</gcm></message>"#,
        #"<message><data:gcm xmlns:data="google:mobile:data">{"message_type":"control","control_type":"CONNECTION_DRAINING"}</data:gcm></message>"#,
        #"<message id=""><gcm \#(gcm)>{"a":1}</gcm></message>"#,
        #"<message id="m-7" to="x@y/z"><gcm \#(gcm) extra="1">{}</gcm></message>"#,
        #"<message id="m-7" type="error"><gcm \#(gcm)>{"random":"text"}</gcm><error code="400" type="modify"><bad-request xmlns="urn:ietf:params:xml:ns:xmpp-stanzas"/><text xmlns="urn:ietf:params:xml:ns:xmpp-stanzas">InvalidJson</text></error></message>"#,
        #"<message type="normal"><gcm \#(gcm)>{}</gcm></message>"#,
        #"<message xmlns:x="urn:x" x:type="error"><gcm \#(gcm)>{}</gcm></message>"#,
        "<message>\n  <gcm \(gcm)>\n  {\"a\" : \"b\"}\n  </gcm>\n</message>",
        #"<message><gcm \#(gcm)>{"t":"&lt;&amp;&gt;&quot;&apos;&#x1F600;&#233;"}</gcm></message>"#,
        #"<message><gcm \#(gcm)><![CDATA[{"t":"<b>&amp;"}]]>{"u":1}<![CDATA[]]></gcm></message>"#,
        #"<message><gcm \#(gcm)>{"t":"é€😀 \u00e9"}</gcm></message>"#,
        #"<message><gcm \#(gcm)/></message>"#,
        #"<message><gcm \#(gcm)></gcm></message>"#,
        #"<message><gcm xmlns="urn:other">{}</gcm></message>"#,
        #"<message><gcm>{}</gcm></message>"#,
        #"<message><body>hi</body><gcm \#(gcm)>{}</gcm></message>"#,
        #"<message><gcm \#(gcm)>{}</gcm><body>after</body></message>"#,
        #"<message><gcm \#(gcm)>{"n":1}</gcm><gcm \#(gcm)>{"n":2}</gcm></message>"#,
        #"<message><gcm \#(gcm)>a<b>c</b>d</gcm></message>"#,
        #"<message><gcm \#(gcm)>a<b/></gcm>tail</message>"#,
        #"<message/>"#,
        #"<message>only text</message>"#,
        #"<message>lead<gcm \#(gcm)>{}</gcm>tail</message>"#,
        #"<message xmlns="urn:other"><gcm \#(gcm)>{}</gcm></message>"#,
        #"<iq type="get" id="p1" from="gcm.googleapis.com"><ping xmlns="urn:xmpp:ping"/></iq>"#,
        #"<presence/>"#,
        #"<gcm \#(gcm)>{}</gcm>"#,
    ]

    /// Inputs: each stanza alone, all of them in a row with keepalives between, and endings the stream may have.
    static func inputs() -> [String] {
        var inputs = stanzas.map { serverHeader + $0 }
        inputs.append(serverHeader + stanzas.joined(separator: " \n") + "</stream:stream>")
        inputs.append(serverHeader + stanzas[0] + stanzas[0] + "<message><gcm \(gcm)>{}</gcm>")  // cut off inside
        inputs.append(serverHeader + "<message><gcm \(gcm)>{}</gcm><!-- c --></message>")  // restricted XML
        inputs.append(serverHeader + "<message><gcm \(gcm)>{}</gcm></message><message><gcm \(gcm)>{}</gcm></mess>")
        inputs.append(serverHeader + "<message><gcm \(gcm)>{}&bogus;</gcm></message>")
        return inputs
    }

    static let limits: [XMLStreamLimits] = [
        XMLStreamLimits(),
        XMLStreamLimits(maxDepth: 1),  // the gcm child is too deep
        XMLStreamLimits(maxStanzaBytes: 60),  // the longer stanzas are too large, at their child or their end
        XMLStreamLimits(maxStanzaBytes: 200),
        XMLStreamLimits(maxAttributes: 8),
    ]

    /// The general path: no shape, every stanza built.
    static func general(_ input: String, chunkSize: Int?, limits: XMLStreamLimits) -> ([Entry], XMLStreamError?) {
        let result = feed(Array(input.utf8), chunkSize: chunkSize, to: XMLStreamParser(limits: limits))
        return (result.events.map(Entry.event), result.error)
    }

    /// The shortcut: the payload handler takes (or declines) every payload it is offered.
    static func shortcut(_ input: String, chunkSize: Int?, limits: XMLStreamLimits, take: Bool) -> ([Entry], XMLStreamError?) {
        let parser = XMLStreamParser(limits: limits, payloadShape: .ccs)
        let bytes = Array(input.utf8)
        var entries: [Entry] = []
        let size = max(1, chunkSize ?? bytes.count)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            var failure: XMLStreamError?
            Array(bytes[offset..<end]).withUnsafeBytes { buffer in
                do throws(XMLStreamError) {
                    try parser.feed(buffer, payload: { text in
                        if take { entries.append(.payload(String(decoding: text, as: UTF8.self))) }
                        return take
                    }) { entries.append(.event($0)) }
                } catch {
                    failure = error
                }
            }
            if let failure { return (entries, failure) }
            offset = end
        }
        return (entries, nil)
    }

    /// The payload shape, decided on the element the general path built.
    static func payload(of element: XMLElement) -> String? {
        guard element.name == "message", element.attribute("type") == nil, element.children.count == 1 else { return nil }
        let child = element.children[0]
        guard child.is("gcm", XMLNamespace.gcm), child.children.isEmpty else { return nil }
        return child.text
    }

    @Test func declinedPayloadsComeAsTheElementsOfTheGeneralPath() {
        for input in Self.inputs() {
            for limits in Self.limits {
                for chunkSize in chunkSizes {
                    let general = Self.general(input, chunkSize: chunkSize, limits: limits)
                    let declined = Self.shortcut(input, chunkSize: chunkSize, limits: limits, take: false)
                    #expect(declined.0 == general.0, "\(input) chunk \(String(describing: chunkSize)) \(limits)")
                    #expect(declined.1 == general.1, "\(input) chunk \(String(describing: chunkSize)) \(limits)")
                }
            }
        }
    }

    @Test func takenPayloadsAreTheTextOfExactlyThePayloadShapedStanzas() {
        var taken = 0
        for input in Self.inputs() {
            for limits in Self.limits {
                for chunkSize in chunkSizes {
                    let general = Self.general(input, chunkSize: chunkSize, limits: limits)
                    let expected = general.0.map { entry -> Entry in
                        if case .event(.stanza(let element)) = entry, let text = Self.payload(of: element) { return .payload(text) }
                        return entry
                    }
                    let shortcut = Self.shortcut(input, chunkSize: chunkSize, limits: limits, take: true)
                    #expect(shortcut.0 == expected, "\(input) chunk \(String(describing: chunkSize)) \(limits)")
                    #expect(shortcut.1 == general.1, "\(input) chunk \(String(describing: chunkSize)) \(limits)")
                    taken += shortcut.0.filter { if case .payload = $0 { true } else { false } }.count
                }
            }
        }
        #expect(taken > 300, "the shortcut must actually take payloads, or the comparison proves nothing")
    }

    /// A payload stanza's handler that restarts the stream (as after SASL success) gets the next bytes parsed
    /// as a new stream, as with a `.stanza` event.
    @Test func aRestartFromThePayloadHandlerAppliesToTheNextByte() {
        let parser = XMLStreamParser(payloadShape: .ccs)
        var entries: [Entry] = []
        let input = serverHeader + "<message><gcm \(Self.gcm)>{}</gcm></message>" + serverHeader + "<presence/>"
        var failure: XMLStreamError?
        Array(input.utf8).withUnsafeBytes { buffer in
            do throws(XMLStreamError) {
                try parser.feed(buffer, payload: { text in
                    entries.append(.payload(String(decoding: text, as: UTF8.self)))
                    parser.reset()
                    return true
                }) { entries.append(.event($0)) }
            } catch {
                failure = error
            }
        }
        #expect(failure == nil)
        #expect(entries.count == 4)
        #expect(entries[1] == .payload("{}"))
        if case .event(.streamStart)? = entries.dropFirst(2).first {} else { Issue.record("no new stream: \(entries)") }
    }
}

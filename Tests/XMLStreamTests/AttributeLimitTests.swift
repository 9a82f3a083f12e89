import Testing
import XMLStream

@Suite("Parser limits: attributes per start tag")
struct AttributeLimitTests {
    /// `<message a0='…' a1='…' …/>` with `count` attributes whose values hold `=`, `>` and the other quote.
    private func stanza(attributes count: Int) -> String {
        "<message" + (0..<count).map { " a\($0)='x=\"y>'" }.joined() + "/>"
    }

    @Test func defaultIs64() {
        #expect(XMLStreamLimits().maxAttributes == 64)
        #expect(feed(serverHeader + stanza(attributes: 64)).error == nil)
        #expect(feed(serverHeader + stanza(attributes: 65)).error?.kind == .tooManyAttributes)
    }

    @Test(arguments: chunkSizes)
    func atTheLimitPassesOneMoreFailsNamingTheLimit(chunkSize: Int?) {
        let limits = XMLStreamLimits(maxAttributes: 10)
        let atLimit = feed(serverHeader + stanza(attributes: 10) + "<message xmlns:x='urn:x' x:a='1'/>", chunkSize: chunkSize, limits: limits)
        #expect(atLimit.error == nil)
        #expect(atLimit.stanzas.count == 2)
        #expect(atLimit.stanzas.first?.attributes.count == 10)

        let over = feed(serverHeader + stanza(attributes: 1) + stanza(attributes: 11), chunkSize: chunkSize, limits: limits)
        #expect(over.stanzas.count == 1, "the stanza before the offending one is delivered")
        #expect(over.error?.kind == .tooManyAttributes)
        #expect(over.error?.streamErrorCondition == "policy-violation")
        #expect(over.error?.message.contains("limit of 10") == true)
    }

    @Test func namespaceDeclarationsCount() {
        let limits = XMLStreamLimits(maxAttributes: 8)
        let declarations = (0..<9).map { " xmlns:p\($0)='urn:\($0)'" }.joined()
        #expect(feed(serverHeader + "<message\(declarations)/>", limits: limits).error?.kind == .tooManyAttributes)
    }

    @Test func textCDATAAndEndTagsAreNotCounted() {
        let limits = XMLStreamLimits(maxAttributes: 8)
        let equals = String(repeating: "a=b ", count: 100)
        let text = "<message><body>\(equals)</body><data><![CDATA[<x \(equals)> ]] ]]></data></message>"
        let result = feed(serverHeader + text, chunkSize: 7, limits: limits)
        #expect(result.error == nil)
        #expect(result.stanzas.count == 1)
    }

    /// The error comes at the extra attribute, not after the whole tag: a tag of a million attributes stops
    /// within the first few hundred bytes, before libxml2 buffers it.
    @Test func aHugeTagFailsAtTheExtraAttribute() {
        let limits = XMLStreamLimits(maxStanzaBytes: 16_777_216, maxAttributes: 64)
        let result = feed(serverHeader + "<message" + (0..<100_000).map { " a\($0)=''" }.joined(), limits: limits)
        #expect(result.error?.kind == .tooManyAttributes)
    }

    /// A restarted stream starts counting afresh (the counter follows the bytes libxml2 gets).
    @Test func countingRestartsWithTheStream() {
        let parser = XMLStreamParser(limits: XMLStreamLimits(maxAttributes: 8))
        var events: [XMLStreamEvent] = []
        // The first stream ends inside a tag's attribute list as far as a naive counter would know.
        let first = serverHeader + "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>"
        #expect(throws: Never.self) {
            try parser.feed(first + serverHeader + "<message a='1' b='2'/>") { event in
                events.append(event)
                if case .stanza(let element) = event, element.name == "success" { parser.reset() }
            }
        }
        #expect(events.count == 4)
    }
}

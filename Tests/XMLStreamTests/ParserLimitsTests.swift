import Testing
import XMLStream

@Suite("Parser limits")
struct ParserLimitsTests {
    /// `<message><body>xxx…</body></message>` of exactly `size` bytes.
    private func stanza(ofSize size: Int) -> String {
        let markup = "<message><body></body></message>"
        return "<message><body>" + String(repeating: "x", count: size - markup.utf8.count) + "</body></message>"
    }

    @Test func defaults() {
        let limits = XMLStreamLimits()
        #expect(limits.maxStanzaBytes == 1_048_576)
        #expect(limits.maxDepth == 32)
    }

    @Test(arguments: chunkSizes)
    func stanzaOfExactlyTheLimitPassesOneMoreByteFails(chunkSize: Int?) {
        let limits = XMLStreamLimits(maxStanzaBytes: 1000)
        #expect(stanza(ofSize: 1000).utf8.count == 1000)
        // Whitespace keepalives around the stanza are not part of it.
        let atLimit = feed(serverHeader + "   \n" + stanza(ofSize: 1000) + "\n   " + stanza(ofSize: 1000), chunkSize: chunkSize, limits: limits)
        #expect(atLimit.error == nil)
        #expect(atLimit.stanzas.count == 2)

        let over = feed(serverHeader + stanza(ofSize: 1000) + stanza(ofSize: 1001), chunkSize: chunkSize, limits: limits)
        #expect(over.stanzas.count == 1, "the stanza before the big one is delivered")
        #expect(over.error?.kind == .stanzaTooLarge)
        #expect(over.error?.streamErrorCondition == "policy-violation")
    }

    @Test func sizeCountsRawBytesNotDecodedText() {
        // 100 × "&amp;" is 500 bytes on the wire but 100 characters of text.
        let markup = "<message><body></body></message>"
        let body = String(repeating: "&amp;", count: 100)
        let limits = XMLStreamLimits(maxStanzaBytes: markup.utf8.count + 499)
        let result = feed(serverHeader + "<message><body>\(body)</body></message>", limits: limits)
        #expect(result.error?.kind == .stanzaTooLarge)
    }

    @Test func headerIsNotCountedAgainstTheFirstStanza() {
        // A long stream header followed at once by a stanza of exactly the limit.
        let header = "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='\(String(repeating: "i", count: 500))'>"
        let result = feed(header + stanza(ofSize: 600), limits: XMLStreamLimits(maxStanzaBytes: 600))
        #expect(result.error == nil)
        #expect(result.stanzas.count == 1)
    }

    @Test func hugeTextNodeFailsLongBeforeItEnds() {
        let parser = XMLStreamParser()
        #expect(throws: Never.self) { try parser.feed(serverHeader + "<message><body>") { _ in } }
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
        var failedAt: Int?
        for index in 0..<320 {  // 20 MiB if nothing stopped it
            do {
                try parser.feed(chunk) { _ in }
            } catch {
                #expect(error.kind == .stanzaTooLarge)
                failedAt = index
                break
            }
        }
        #expect(failedAt != nil)
        #expect((failedAt ?? .max) <= 17, "failed after \((failedAt ?? 0) + 1) chunks of 64 KiB")
    }

    @Test func hugeTextInOneFeedCallFails() {
        let text = String(repeating: "b", count: 3 * 1_048_576)
        let result = feed(serverHeader + "<message><body>" + text + "</body></message>")
        #expect(result.error?.kind == .stanzaTooLarge)
        #expect(result.stanzas.isEmpty)
    }

    @Test func hugeAttributeFailsBeforeTheTagIsComplete() {
        // libxml2 buffers a start tag until its `>`: the parser must not let that grow without bound.
        let parser = XMLStreamParser()
        #expect(throws: Never.self) { try parser.feed(serverHeader + "<message id='") { _ in } }
        let chunk = [UInt8](repeating: UInt8(ascii: "z"), count: 64 * 1024)
        var failedAt: Int?
        for index in 0..<320 {
            do {
                try parser.feed(chunk) { _ in }
            } catch {
                #expect(error.kind == .stanzaTooLarge)
                failedAt = index
                break
            }
        }
        #expect((failedAt ?? .max) <= 17)
    }

    @Test func hugeCDATASectionFails() {
        let text = String(repeating: "c", count: 2 * 1_048_576)
        let result = feed(serverHeader + "<message><body><![CDATA[" + text, chunkSize: 100_000)
        #expect(result.error?.kind == .stanzaTooLarge)
    }

    @Test func hugeStreamHeaderFails() {
        let result = feed("<stream:stream xmlns:stream='http://etherx.jabber.org/streams' id='" + String(repeating: "h", count: 300_000), chunkSize: 4096, limits: XMLStreamLimits(maxStanzaBytes: 100_000))
        #expect(result.error?.kind == .stanzaTooLarge)
        #expect(result.events.isEmpty)
    }

    @Test(arguments: [nil, 1] as [Int?])
    func depthAtTheLimitPassesOneDeeperFails(chunkSize: Int?) {
        let limits = XMLStreamLimits(maxDepth: 4)
        // message = 1, a = 2, b = 3, c = 4.
        let atLimit = feed(serverHeader + "<message><a><b><c/></b></a></message>", chunkSize: chunkSize, limits: limits)
        #expect(atLimit.error == nil)
        #expect(atLimit.stanzas.first?.children.first?.children.first?.children.first?.name == "c")

        let over = feed(serverHeader + "<message><a><b><c><d/></c></b></a></message>", chunkSize: chunkSize, limits: limits)
        #expect(over.error?.kind == .tooDeep)
        #expect(over.error?.streamErrorCondition == "policy-violation")
        #expect(over.stanzas.isEmpty)
    }

    @Test func defaultDepthLimit() {
        func nested(_ depth: Int) -> String {
            String(repeating: "<e>", count: depth) + String(repeating: "</e>", count: depth)
        }
        #expect(feed(serverHeader + nested(32)).error == nil)
        #expect(feed(serverHeader + nested(33)).error?.kind == .tooDeep)
    }
}

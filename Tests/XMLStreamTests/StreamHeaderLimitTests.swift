import Testing
import XMLStream

/// The stream header is bound by `maxStanzaBytes` like any stream-level construct, however the bytes are
/// split: a complete header in one piece used to pass the limit that the same header in pieces failed.
@Suite("Stream header limit")
struct StreamHeaderLimitTests {
    static let header = "<stream:stream from='gcm.googleapis.com' id='" + String(repeating: "h", count: 200)
        + "' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"

    @Test(arguments: [nil, 1, 18, 64] as [Int?])
    func aHeaderOverTheLimitFailsInAnySplit(chunkSize: Int?) {
        let size = Self.header.utf8.count
        let over = feed(Self.header + "<a/>", chunkSize: chunkSize, limits: XMLStreamLimits(maxStanzaBytes: size - 1))
        #expect(over.error?.kind == .stanzaTooLarge)
        #expect(over.events.isEmpty)
        let atLimit = feed("<?xml version='1.0'?>\n" + Self.header + "<a/>", chunkSize: chunkSize, limits: XMLStreamLimits(maxStanzaBytes: size))
        #expect(atLimit.error == nil)
        #expect(atLimit.events.count == 2)
    }
}

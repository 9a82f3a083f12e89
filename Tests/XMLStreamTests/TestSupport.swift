import XMLStream

/// What the server sends first on a CCS connection (ccs-protocol.md §1), single-quoted like Prosody.
let serverHeader =
    "<stream:stream from='gcm.googleapis.com' id='4F2A9C' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"

/// The result of feeding a whole input: every event delivered, and the error that stopped it, if any.
struct FeedResult {
    var events: [XMLStreamEvent] = []
    var error: XMLStreamError?

    var stanzas: [XMLElement] {
        events.compactMap { if case .stanza(let element) = $0 { element } else { nil } }
    }
}

/// Feeds `bytes` to `parser` in pieces of `chunkSize` bytes (the whole input when nil), stopping at the
/// first error.
func feed(_ bytes: [UInt8], chunkSize: Int? = nil, to parser: XMLStreamParser) -> FeedResult {
    var result = FeedResult()
    let size = max(1, chunkSize ?? bytes.count)
    var offset = 0
    while offset < bytes.count {
        let end = min(offset + size, bytes.count)
        do {
            try parser.feed(Array(bytes[offset..<end])) { result.events.append($0) }
        } catch {
            result.error = error
            return result
        }
        offset = end
    }
    return result
}

func feed(
    _ input: String, chunkSize: Int? = nil, limits: XMLStreamLimits = XMLStreamLimits()
) -> FeedResult {
    feed(Array(input.utf8), chunkSize: chunkSize, to: XMLStreamParser(limits: limits))
}

func feed(
    _ bytes: [UInt8], chunkSize: Int? = nil, limits: XMLStreamLimits = XMLStreamLimits()
) -> FeedResult {
    feed(bytes, chunkSize: chunkSize, to: XMLStreamParser(limits: limits))
}

/// The one stanza in `serverHeader + stanza`, fed whole.
func parseStanza(_ stanza: String) -> XMLElement? {
    let result = feed(serverHeader + stanza)
    guard result.error == nil, result.stanzas.count == 1 else { return nil }
    return result.stanzas[0]
}

/// Chunk sizes every framing-sensitive test is run with: whole input, single bytes, and odd sizes that
/// cut tags, entities and UTF-8 sequences at varying places.
let chunkSizes: [Int?] = [nil, 1, 2, 3, 7, 64]

import Testing
@testable import XMLStream

/// What servers and clients write before a stream header, on the first stream and after a restart
/// (RFC 6120 §4.3.3, §11.6; XML 1.0 §2.8, §4.3.3): whitespace left over from the old stream, a UTF-8
/// byte-order mark, an XML declaration, in any chunking.
@Suite struct StreamPrologueTests {
    static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    static let declaration = Array("<?xml version='1.0'?>".utf8)
    static let success = Array("<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>".utf8)
    static let features = Array("<str:features xmlns:str='http://etherx.jabber.org/streams'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></str:features>".utf8)
    static let newline = Array("\n".utf8)

    /// Every prefix a stream may start with: whitespace, BOMs and an XML declaration, combined.
    static let prefixes: [(String, [UInt8])] = {
        var prefixes: [(String, [UInt8])] = []
        let leads: [(String, [UInt8])] = [
            ("nothing", []), ("newline", newline), ("CRLF and spaces", Array("\r\n  \t".utf8)), ("BOM", bom),
            ("newline then BOM", newline + bom), ("BOM then newline", bom + newline), ("two BOMs", bom + bom),
        ]
        for (name, lead) in leads {
            prefixes.append((name, lead))
            prefixes.append((name + " + declaration", lead + declaration))
            prefixes.append((name + " + declaration + newline", lead + declaration + newline))
        }
        return prefixes
    }()

    /// Cuts `bytes` into pieces: fixed `size`, or seeded random sizes 1...9 when `size` is nil.
    static func chunks(_ bytes: [UInt8], size: Int?, seed: UInt64) -> [[UInt8]] {
        var state = seed
        var pieces: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            let length: Int
            if let size {
                length = size
            } else {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                length = Int(state >> 60) % 9 + 1
            }
            let end = min(bytes.count, offset + length)
            pieces.append(Array(bytes[offset..<end]))
            offset = end
        }
        return pieces
    }

    /// Feeds pieces, resetting the parser from inside the handler on `<success/>` as `XMPPClient` does.
    static func run(_ pieces: [[UInt8]]) -> FeedResult {
        let parser = XMLStreamParser()
        var result = FeedResult()
        for piece in pieces {
            do {
                try parser.feed(piece) { event in
                    result.events.append(event)
                    if case .stanza(let element) = event, element.name == "success" { parser.reset() }
                }
            } catch {
                result.error = error
                return result
            }
        }
        return result
    }

    static let chunkings: [(Int?, UInt64)] = [(nil, 0), (1, 0), (2, 0), (3, 0), (nil, 1), (nil, 2), (nil, 3), (nil, 4), (nil, 5)]

    @Test func firstStreamAcceptsWhitespaceMarksAndDeclarationInAnyChunking() {
        for (name, prefix) in Self.prefixes {
            let input = prefix + Array(serverHeader.utf8) + Self.features
            for (size, seed) in Self.chunkings {
                let pieces = size == nil && seed == 0 ? [input] : Self.chunks(input, size: size, seed: seed)
                let result = Self.run(pieces)
                #expect(result.error == nil, "\(name), chunks \(size.map(String.init) ?? "random \(seed)"): \(String(describing: result.error))")
                #expect(result.events.count == 2, "\(name): \(result.events)")
            }
        }
    }

    /// The failing login of issue 7: `<success/>`, a newline of the old stream, then the new stream with an
    /// XML declaration (or a BOM, or both), all in one read or cut anywhere.
    @Test func restartedStreamAcceptsWhatFollowsSuccessInAnyChunking() {
        for trailer in [[], Self.newline, Array(" \r\n ".utf8)] {
            for (name, prefix) in Self.prefixes {
                let input = Array(serverHeader.utf8) + Self.success + trailer + prefix + Array(serverHeader.utf8) + Self.features
                for (size, seed) in Self.chunkings {
                    let pieces = size == nil && seed == 0 ? [input] : Self.chunks(input, size: size, seed: seed)
                    let result = Self.run(pieces)
                    let label = "trailer \(trailer), \(name), chunks \(size.map(String.init) ?? "random \(seed)")"
                    #expect(result.error == nil, "\(label): \(String(describing: result.error))")
                    guard result.events.count == 4, case .streamStart = result.events[2],
                          case .stanza(let features) = result.events[3] else {
                        Issue.record("\(label): unexpected events \(result.events)")
                        continue
                    }
                    #expect(features.child("bind", namespace: XMLNamespace.bind) != nil)
                }
            }
        }
    }

    /// The trailer arrives in its own read after the restart (a separate TLS record).
    @Test func trailerInALaterReadIsSkippedToo() throws {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        let handler: (XMLStreamEvent) -> Void = { event in
            events.append(event)
            if case .stanza(let element) = event, element.name == "success" { parser.reset() }
        }
        try parser.feed(Array(serverHeader.utf8) + Self.success, handler)
        try parser.feed(Self.newline, handler)
        try parser.feed(Self.bom + Self.declaration, handler)
        try parser.feed(Array(serverHeader.utf8) + Self.features, handler)
        #expect(events.count == 4)
    }

    /// Only whitespace and whole byte-order marks are skipped: anything else before the header is still an
    /// error, and so is a byte-order mark cut short, whatever the chunking.
    @Test func otherBytesBeforeTheHeaderStillFail() {
        let header = Array(serverHeader.utf8)
        let cases: [(String, [UInt8])] = [
            ("text", Array("x".utf8) + header),
            ("BOM cut after one byte", [0xEF] + header),
            ("BOM cut after two bytes", [0xEF, 0xBB] + header),
            ("BOM start then a valid character", [0xEF, 0xBB, 0x80] + header),
            ("declaration after text", Array("x".utf8) + Self.declaration + header),
            ("U+FEFF as a character inside the stream", header + Self.bom + Self.features),
        ]
        for (name, input) in cases {
            for size in [nil, 1, 2] as [Int?] {
                let result = Self.run(Self.chunks(input, size: size ?? input.count, seed: 0))
                #expect(result.error != nil, "\(name), chunk \(String(describing: size)) was accepted: \(result.events)")
            }
        }
        // After a restart too.
        let restarted = header + Self.success + Self.newline + [0xEF, 0xBB] + header
        for size in [restarted.count, 1] {
            let result = Self.run(Self.chunks(restarted, size: size, seed: 0))
            #expect(result.error != nil && result.events.count == 2, "\(result.events) \(String(describing: result.error))")
        }
    }

    @Test func utf16MarkAfterWhitespaceIsStillNamedAsAnEncodingError() {
        let result = feed([0x0A, 0xFF, 0xFE] + Array("<".utf8).flatMap { [$0, 0] })
        #expect(result.error?.kind == .unsupportedEncoding)
    }

    // MARK: The scanner alone

    @Test func scannerReportsContentOffsetAndReplayAcrossChunks() {
        func scan(_ prologue: inout StreamPrologue, _ bytes: [UInt8]) -> StreamPrologue.Outcome {
            bytes.withUnsafeBytes { prologue.scan($0) }
        }
        var p = StreamPrologue()
        #expect(scan(&p, [0x0A, 0x20]) == .skippedAll)
        #expect(scan(&p, [0xEF]) == .skippedAll)
        #expect(scan(&p, [0xBB, 0xBF, 0x0A, 0x3C]) == .content(offset: 3, replay: 0))
        #expect(p.isFinished)

        var q = StreamPrologue()
        #expect(scan(&q, [0x20, 0xEF]) == .skippedAll)
        #expect(scan(&q, [0xBB, 0x3C]) == .content(offset: 0, replay: 1))

        var r = StreamPrologue()
        #expect(scan(&r, [0x20, 0xEF, 0xBB, 0x3C]) == .content(offset: 1, replay: 0))

        var s = StreamPrologue()
        #expect(scan(&s, [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF, 0x3C]) == .content(offset: 6, replay: 0))
    }
}

import XMLStream

/// Everything one feeding of a stream produced: the events in order and the error that stopped it.
struct StreamRun: Equatable {
    var events: [XMLStreamEvent] = []
    var error: XMLStreamError?
    /// A broken promise of the parser seen while feeding (not an input error).
    var violation: String?
    /// Payloads taken through `feed(_:payload:_:)`: the text, and how many events came before it.
    var taken: [Taken] = []

    struct Taken: Equatable {
        var at: Int
        var text: String
    }

    var stanzas: [XMLElement] {
        events.compactMap { if case .stanza(let element) = $0 { element } else { nil } }
    }

    /// Feeds `bytes` to a new parser in pieces whose sizes cycle through `chunkSizes` (the whole input in
    /// one call when empty), stopping at the first error. With `restartOnSuccess`, a SASL `<success/>`
    /// restarts the stream from inside the handler, as the XMPP client does (RFC 6120 §6.4.6). With
    /// `payloads` set, the parser has `XMLPayloadShape.ccs` and its payload handler takes (true) or declines
    /// (false) every payload.
    static func feed(_ bytes: [UInt8], chunkSizes: [Int] = [], limits: XMLStreamLimits = XMLStreamLimits(),
                     restartOnSuccess: Bool = false, payloads: Bool? = nil) -> StreamRun {
        let parser = XMLStreamParser(limits: limits, payloadShape: payloads == nil ? nil : .ccs)
        var run = StreamRun()
        var offset = 0
        var turn = 0
        while offset < bytes.count {
            let size = chunkSizes.isEmpty ? bytes.count : max(1, chunkSizes[turn % chunkSizes.count])
            turn += 1
            let end = min(bytes.count, offset + size)
            let failure = bytes[offset..<end].withUnsafeBytes { piece -> XMLStreamError? in
                do throws(XMLStreamError) {
                    let handler = { (event: XMLStreamEvent) in
                        run.events.append(event)
                        if restartOnSuccess, case .stanza(let element) = event, element.is("success", XMLNamespace.sasl) {
                            parser.reset()
                        }
                    }
                    if let take = payloads {
                        try parser.feed(piece, payload: { text in
                            if take { run.taken.append(Taken(at: run.events.count, text: String(decoding: text, as: UTF8.self))) }
                            return take
                        }, handler)
                    } else {
                        try parser.feed(piece, handler)
                    }
                } catch {
                    return error
                }
                return nil
            }
            if let failure {
                run.error = failure
                // A failed parser refuses more input with the same error until reset.
                var again: XMLStreamError?
                do throws(XMLStreamError) { try parser.feed([0x20]) { _ in } } catch { again = error }
                if again?.kind != failure.kind {
                    run.violation = "after \(failure.kind), a further feed gave \(String(describing: again?.kind))"
                }
                return run
            }
            offset = end
        }
        return run
    }
}

/// Shared checks.
enum Invariants {
    /// The header a client's stanzas are read under, as a server reads them (default namespace jabber:client).
    static let clientStreamHeader = Array(XMLWriter.streamHeader(to: "gcm.googleapis.com").utf8)
    /// A server's header (what ccsd reads).
    static let serverStreamHeader = Array(
        "<stream:stream from='gcm.googleapis.com' id='F1' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>".utf8)

    /// `element` written by `XMLWriter` and read back by `XMLStreamParser` under a jabber:client stream:
    /// the stanza read back, or a violation.
    static func writtenAndReadBack(_ element: XMLElement) -> Result<XMLElement, Violation> {
        let text = XMLWriter.serialize(element, parentNamespace: XMLNamespace.client)
        let run = StreamRun.feed(serverStreamHeader + Array(text.utf8))
        if let error = run.error {
            return .failure(Violation("XMLWriter output does not parse (\(error.kind): \(error.message)): \(text)"))
        }
        guard run.stanzas.count == 1, let back = run.stanzas.first else {
            return .failure(Violation("XMLWriter output gave \(run.stanzas.count) stanzas: \(text)"))
        }
        return .success(back)
    }

    /// Checks that `element` survives XMLWriter → XMLStreamParser unchanged.
    static func checkWriterRoundTrip(_ element: XMLElement, _ violations: inout [String], _ what: String) {
        switch writtenAndReadBack(element) {
        case .failure(let violation): violations.append("\(what): \(violation.text)")
        case .success(let back):
            if back != element {
                violations.append("\(what): XMLWriter → parser changed the element:\n  \(element)\n  \(back)")
            }
        }
    }

    /// The deepest element in a tree (the tree's root counts 1).
    static func height(_ element: XMLElement) -> Int {
        1 + (element.children.map(height).max() ?? 0)
    }
}

struct Violation: Error {
    var text: String
    init(_ text: String) { self.text = text }
}

/// True when every scalar of `s` is an XML 1.0 `Char` (XML 1.0 §2.2).
func isXMLText(_ s: String) -> Bool {
    s.unicodeScalars.allSatisfy { scalar in
        switch scalar.value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }
}

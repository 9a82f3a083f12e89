import XMLStream

/// The XML stream parser on any bytes, in any splits.
///
/// Input: byte 0 chooses the run, the next `byte0 & 7` bytes are chunk sizes (each 1…256, cycled), the
/// rest is the stream as a server would send it
/// (no chunk-size bytes: pieces of 7 bytes).
/// - `byte0 & 0x08`: small limits (256-byte stanzas, depth 4) instead of the defaults;
/// - `byte0 & 0x10`: a SASL `<success/>` restarts the stream from inside the handler, as the client does.
///
/// Invariants: no crash, leak or hang; the events do not depend on how the bytes are split; a failed parser
/// keeps failing with the same error; no stanza is deeper than the limit; every stanza survives
/// `XMLWriter` → parser unchanged; the payload shortcut (`XMLPayloadShape.ccs`), fed the same pieces, gives
/// the same events and error when it declines every payload, and when it takes them, the payloads of exactly
/// the stanzas of that shape, in their places.
///
/// Whether and with which kind a stream has failed by the end of the input may depend on the split, and is
/// not compared: libxml2's push parser looks at a construct only once a heuristic scan of its buffer says the
/// construct is complete (a `>` outside quotes), so a broken start tag can be reported at once in one split
/// and only with later bytes in another (never after a later event); and the size limit is checked between
/// pieces as well as inside them. Nor is how far each feeding got by the end of the input: libxml2 reads a
/// start tag whose `>` sits inside an unclosed quote when the whole text is in its buffer (it reports the
/// start of the stream header, then waits or fails), while a feeding in small pieces waits for a `>` outside
/// quotes (no event yet), and may meanwhile meet an error its input layer sees at once (bytes that are not
/// UTF-8). So one feeding's events must be a prefix of the other's: any event that differs, is missing from
/// the middle, or comes in another order is caught; a feeding that is behind at the end of the input is not.
enum XMLStreamTarget {
    static func run(_ input: [UInt8]) -> [String] {
        guard let first = input.first else { return [] }
        let sizesEnd = min(input.count, 1 + Int(first & 0x07))
        var chunkSizes = input[1..<sizesEnd].map { Int($0) + 1 }
        if chunkSizes.isEmpty { chunkSizes = [7] }
        let stream = Array(input[sizesEnd...])
        let limits = first & 0x08 != 0 ? XMLStreamLimits(maxStanzaBytes: 256, maxDepth: 4) : XMLStreamLimits()
        let restart = first & 0x10 != 0

        let whole = StreamRun.feed(stream, limits: limits, restartOnSuccess: restart)
        let split = StreamRun.feed(stream, chunkSizes: chunkSizes, limits: limits, restartOnSuccess: restart)

        var violations: [String] = []
        for run in [whole, split] {
            if let violation = run.violation { violations.append(violation) }
        }
        let declined = StreamRun.feed(stream, chunkSizes: chunkSizes, limits: limits, restartOnSuccess: restart, payloads: false)
        if declined.events != split.events || declined.error != split.error {
            violations.append("declined payloads differ from the general path:\n  general: \(split.events) \(String(describing: split.error))\n  declined: \(declined.events) \(String(describing: declined.error))")
        }
        let taken = StreamRun.feed(stream, chunkSizes: chunkSizes, limits: limits, restartOnSuccess: restart, payloads: true)
        var expected = StreamRun(error: split.error)
        for event in split.events {
            if case .stanza(let element) = event, let text = Self.payload(of: element) {
                expected.taken.append(StreamRun.Taken(at: expected.events.count, text: text))
            } else {
                expected.events.append(event)
            }
        }
        if taken.events != expected.events || taken.taken != expected.taken || taken.error != expected.error {
            violations.append("taken payloads differ from the general path:\n  expected: \(expected)\n  taken: \(taken)")
        }
        if !Self.eventsAgree(whole, split) {
            violations.append("events differ between one feed and chunks \(chunkSizes):\n  whole: \(whole.events)\n  split: \(split.events)")
        }
        for stanza in whole.stanzas {
            // Depth 1 is the stanza itself.
            if Invariants.height(stanza) > limits.maxDepth {
                violations.append("stanza <\(stanza.name)> is \(Invariants.height(stanza)) deep, limit \(limits.maxDepth)")
            }
            Invariants.checkWriterRoundTrip(stanza, &violations, "stanza <\(stanza.name)>")
        }
        return violations
    }

    /// The text of a stanza of the payload shape (decided on the element): a `<message>` without an unprefixed
    /// `type`, whose one child is a `gcm` in `google:mobile:data` without children.
    static func payload(of element: XMLElement) -> String? {
        guard element.name == "message", element.attribute("type") == nil, element.children.count == 1 else { return nil }
        let child = element.children[0]
        guard child.is("gcm", XMLNamespace.gcm), child.children.isEmpty else { return nil }
        return child.text
    }

    /// Whether two feedings of the same bytes agree on their events (see the type's comment).
    static func eventsAgree(_ a: StreamRun, _ b: StreamRun) -> Bool {
        let (shorter, longer) = a.events.count <= b.events.count ? (a.events, b.events) : (b.events, a.events)
        return Array(longer.prefix(shorter.count)) == shorter
    }
}

/// One thing the stream parser has finished reading (RFC 6120 §4.2, §4.4, §8).
///
/// Depth counting follows RFC 6120 §4.1: depth 0 is the `<stream:stream>` element, depth 1 is a
/// first-level child of it (a stanza, `<stream:features>`, a SASL element, `<stream:error>` …).
public enum XMLStreamEvent: Sendable, Equatable {
    /// The `<stream:stream>` open tag (RFC 6120 §4.7): name `stream`, namespace `XMLNamespace.stream`,
    /// its attributes (`to`, `from`, `id`, `version`, `xml:lang` …) in document order, no children, no text.
    /// Namespace declarations (`xmlns`, `xmlns:stream`) are not attributes.
    case streamStart(XMLElement)
    /// One complete depth-1 element with its whole subtree.
    case stanza(XMLElement)
    /// `</stream:stream>` (RFC 6120 §4.4). A new stream on the same parser needs `reset()`.
    case streamEnd
}

/// Bounds on what one peer may make the parser hold in memory (RFC 6120 §13.12 "Denial of Service").
public struct XMLStreamLimits: Sendable, Equatable {
    /// The most bytes one depth-1 element may take on the wire, counted from its `<` to the `>` of its
    /// end tag as fed (before entity resolution). Also bounds any construct libxml2 has to buffer whole
    /// (a start tag, a CDATA section …) at stream level. Default 1 MiB (1_048_576).
    /// Exceeding it throws `XMLStreamError.Kind.stanzaTooLarge` ("policy-violation").
    public var maxStanzaBytes: Int
    /// The deepest element allowed, in RFC 6120 depth: 0 = the stream element, 1 = a stanza,
    /// 2 = a child of a stanza … An element at a depth greater than this throws
    /// `XMLStreamError.Kind.tooDeep` ("policy-violation"). Default 32.
    public var maxDepth: Int
    /// The most attributes one start tag may carry, namespace declarations (`xmlns`, `xmlns:x`) included,
    /// the stream header's too. A start tag with more throws `XMLStreamError.Kind.tooManyAttributes`
    /// ("policy-violation") as soon as the extra attribute's `=` arrives. Default 64.
    public var maxAttributes: Int

    public init(maxStanzaBytes: Int = 1_048_576, maxDepth: Int = 32, maxAttributes: Int = 64) {
        precondition(maxStanzaBytes > 0, "maxStanzaBytes must be positive, got \(maxStanzaBytes)")
        precondition(maxDepth >= 1, "maxDepth must allow stanzas (>= 1), got \(maxDepth)")
        precondition(maxAttributes >= 8, "maxAttributes must allow a stream header (>= 8), got \(maxAttributes)")
        self.maxStanzaBytes = maxStanzaBytes
        self.maxDepth = maxDepth
        self.maxAttributes = maxAttributes
    }
}

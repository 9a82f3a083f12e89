/// Why the stream parser gave up, and the stream error to close the stream with (RFC 6120 §4.9).
///
/// Every error is fatal for the stream: send `XMLWriter.streamError(condition:text:)` with
/// `streamErrorCondition`, then `</stream:stream>`, then close the connection (RFC 6120 §4.9.1.1).
///
/// Conditions chosen (RFC 6120 §4.9.3):
/// - XML or Namespaces in XML well-formedness violations, as libxml2 reports them, including an unbound
///   prefix and a mismatched end tag → "not-well-formed" (§4.9.3.13 covers both [XML] and [XML-NAMES]).
///   "invalid-xml" (§4.9.3.11) is for schema validation, which this parser does not do, so the parser
///   never produces it.
/// - DTDs, entity references other than the five predefined ones, comments and processing instructions
///   → "restricted-xml" (§4.9.3.18, §11.1).
/// - A stanza over `XMLStreamLimits.maxStanzaBytes`, nested deeper than `maxDepth`, or a start tag with
///   more than `maxAttributes` attributes → "policy-violation"
///   (§4.9.3.14, §13.12).
/// - Bytes that are not UTF-8 or not XML 1.0 `Char`s (XML 1.0 §2.2), NUL included → "not-well-formed";
///   a declared or detected encoding other than UTF-8 → "unsupported-encoding" (§4.9.3.22, §11.6).
/// - A root element that is not `stream` in `http://etherx.jabber.org/streams` → "invalid-namespace"
///   when the local name is `stream` (§4.9.3.10), else "not-well-formed".
/// - Character data other than whitespace between stanzas → "bad-format" (§4.9.3.1).
public struct XMLStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// libxml2 reported a fatal or namespace error (malformed markup, mismatched or unclosed tag,
        /// unbound prefix, data after `</stream:stream>` …). Condition "not-well-formed".
        case notWellFormed
        /// Reserved for schema validation failures; the parser never throws it. Condition "invalid-xml".
        case invalidXML
        /// A depth-1 element (or a construct buffered at stream level) is larger than
        /// `XMLStreamLimits.maxStanzaBytes`. Condition "policy-violation".
        case stanzaTooLarge
        /// An element is nested deeper than `XMLStreamLimits.maxDepth`. Condition "policy-violation".
        case tooDeep
        /// A start tag carries more than `XMLStreamLimits.maxAttributes` attributes (namespace declarations
        /// included). Condition "policy-violation".
        case tooManyAttributes
        /// A `<!DOCTYPE …>` (internal or external subset). Condition "restricted-xml".
        case dtdForbidden
        /// An entity reference other than `&amp; &lt; &gt; &quot; &apos;` and character references,
        /// or an entity declaration. Condition "restricted-xml".
        case entityForbidden
        /// Invalid UTF-8, or a character outside XML 1.0 `Char` (XML 1.0 §2.2), e.g. NUL or U+FFFE,
        /// literal or as a character reference. Condition "not-well-formed".
        case invalidCharacter
        /// A comment or processing instruction (RFC 6120 §11.1). Condition "restricted-xml".
        case restrictedXML
        /// An encoding other than UTF-8, declared or detected (RFC 6120 §11.6).
        /// Condition "unsupported-encoding".
        case unsupportedEncoding
        /// The root element is `stream` in a namespace other than `http://etherx.jabber.org/streams`.
        /// Condition "invalid-namespace".
        case invalidNamespace
        /// Character data other than whitespace at stream level (between stanzas). Condition "bad-format".
        case unexpectedText
    }

    public var kind: Kind
    /// Human-readable detail; includes libxml2's message and the line and column when available.
    public var message: String
    /// The RFC 6120 §4.9.3 defined condition to close the stream with, e.g. "not-well-formed".
    public var streamErrorCondition: String

    /// An error of `kind`, with the condition listed for it above unless `streamErrorCondition` is given.
    public init(_ kind: Kind, message: String, streamErrorCondition: String? = nil) {
        self.kind = kind
        self.message = message
        self.streamErrorCondition = streamErrorCondition ?? Self.defaultCondition(for: kind)
    }

    /// The RFC 6120 §4.9.3 condition for each kind (see the type's documentation).
    public static func defaultCondition(for kind: Kind) -> String {
        switch kind {
        case .notWellFormed, .invalidCharacter: "not-well-formed"
        case .invalidXML: "invalid-xml"
        case .stanzaTooLarge, .tooDeep, .tooManyAttributes: "policy-violation"
        case .dtdForbidden, .entityForbidden, .restrictedXML: "restricted-xml"
        case .unsupportedEncoding: "unsupported-encoding"
        case .invalidNamespace: "invalid-namespace"
        case .unexpectedText: "bad-format"
        }
    }

    public var description: String {
        "XMLStreamError(\(kind), \(streamErrorCondition)): \(message)"
    }
}

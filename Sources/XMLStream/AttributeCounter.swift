import Glibc

/// Counts the attributes of each start tag in the raw bytes before libxml2 sees them, so that a start tag
/// with too many attributes fails as soon as its attribute number `XMLStreamLimits.maxAttributes + 1`
/// arrives, not after libxml2 has buffered and parsed the whole tag (libxml2 2.9 checks a tag's attributes
/// for duplicates pairwise, so the cost of one huge tag grows with the square of its attribute count).
///
/// Counts every `=` outside quotes inside a start tag: attributes and namespace declarations alike
/// (RFC 6120 §13.12 "Denial of Service" asks for limits on what a peer can make the parser do). End tags,
/// CDATA sections (XML 1.0 §2.7), comments, processing instructions and declarations are skipped; the
/// parser refuses the last three itself (RFC 6120 §11.1).
///
/// A state machine over bytes: feed every byte in order, in any chunking; `reset()` for a new stream.
struct AttributeCounter {
    // A flat state (one byte; the brackets of a CDATA end apart), copied into locals for the scan: a state
    // with a payload cost a tag check and a copy per byte taken (the counter runs over every byte read).
    private enum State: UInt8 {
        case text
        /// Just after `<`.
        case tagOpen
        /// Inside a start tag, outside quotes.
        case startTag
        case singleQuoted
        case doubleQuoted
        /// Just after `<!`.
        case bang
        /// Inside `<![CDATA[ … ]]>`: `brackets` is how many `]` came last.
        case cdata
        /// Inside an end tag, a processing instruction or a declaration: until `>`.
        case otherMarkup
    }

    let maxAttributes: Int
    private var state = State.text
    private var brackets = 0
    private var count = 0

    init(maxAttributes: Int) {
        self.maxAttributes = maxAttributes
    }

    /// Scans the next bytes. Returns the offset in `bytes` of the `=` that makes a start tag's attribute
    /// count exceed `maxAttributes`, or nil while every tag is within it.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let end = bytes.count
        var index = 0
        var state = self.state
        var brackets = self.brackets
        var count = self.count
        defer {
            self.state = state
            self.brackets = brackets
            self.count = count
        }
        while index < end {
            // The states that wait for one byte skip to it in one move (text, quoted values, other markup:
            // most of a stream's bytes); the others take one byte at a time.
            switch state {
            case .text:
                guard let at = Self.first(UInt8(ascii: "<"), base, from: index, end) else { return nil }
                state = .tagOpen
                index = at + 1
            case .singleQuoted:
                guard let at = Self.first(UInt8(ascii: "'"), base, from: index, end) else { return nil }
                state = .startTag
                index = at + 1
            case .doubleQuoted:
                guard let at = Self.first(UInt8(ascii: "\""), base, from: index, end) else { return nil }
                state = .startTag
                index = at + 1
            case .otherMarkup:
                guard let at = Self.first(UInt8(ascii: ">"), base, from: index, end) else { return nil }
                state = .text
                index = at + 1
            case .tagOpen:
                let byte = base[index]
                index += 1
                switch byte {
                case UInt8(ascii: "!"): state = .bang
                case UInt8(ascii: "?"), UInt8(ascii: "/"): state = .otherMarkup
                case UInt8(ascii: ">"): state = .text
                default:
                    state = .startTag
                    count = 0
                }
            case .startTag:
                // Names and whitespace are skipped to the next byte that matters (a quote, `=` or `>`).
                while index < end, !Self.mattersInStartTag(base[index]) { index += 1 }
                guard index < end else { return nil }
                let byte = base[index]
                let here = index
                index += 1
                switch byte {
                case UInt8(ascii: "'"): state = .singleQuoted
                case UInt8(ascii: "\""): state = .doubleQuoted
                case UInt8(ascii: ">"): state = .text
                default:  // `=`
                    count += 1
                    if count > maxAttributes { return here }
                }
            case .bang:
                let byte = base[index]
                index += 1
                if byte == UInt8(ascii: "[") {
                    state = .cdata
                    brackets = 0
                } else {
                    state = byte == UInt8(ascii: ">") ? .text : .otherMarkup
                }
            case .cdata:
                let byte = base[index]
                index += 1
                if byte == UInt8(ascii: "]") {
                    brackets += 1
                } else if byte == UInt8(ascii: ">"), brackets >= 2 {
                    state = .text
                } else {
                    brackets = 0
                }
            }
        }
        return nil
    }

    /// `'`, `"`, `=` and `>`, the bytes a start tag's state changes on, as bits of a mask (all are below 0x40).
    private static let startTagStops: UInt64 = 1 << 0x27 | 1 << 0x22 | 1 << 0x3D | 1 << 0x3E

    private static func mattersInStartTag(_ byte: UInt8) -> Bool {
        byte < 0x40 && startTagStops & (1 << UInt64(byte)) != 0
    }

    /// The offset of the first `byte` in `base[from..<end]`, or nil.
    private static func first(_ byte: UInt8, _ base: UnsafePointer<UInt8>, from: Int, _ end: Int) -> Int? {
        guard let found = memchr(base + from, Int32(byte), end - from) else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    /// The count of the start tag being scanned (for the error message).
    var currentCount: Int { count }

    mutating func reset() {
        state = .text
        brackets = 0
        count = 0
    }
}

import Glibc
import Testing
@testable import XMLStream

/// `AttributeCounter` against the counter it replaced (a state machine with the CDATA brackets in its state,
/// kept here as the model): the same offset from every scan and the same count after it, over random
/// XML-like streams in random chunks, with every limit from 0 to 4.
@Suite struct AttributeCounterModelTests {
    private static let pieces = ["<", ">", "/", "!", "?", "[", "]", "'", "\"", "=", "a", " ", "x=", "<a", "</a>", "<?p?>",
                                 "<!--c-->", "<![CDATA[", "]]>", "]]", "<!DOCTYPE d>", "<a b='1' c=\"2\">", "<a b=\"'\"/>",
                                 "<b x='>' y=\"=\">", "text", "\n", "é", "<m><gcm xmlns=\"g\">{\"a\":\"<&>\"}</gcm></m>"]

    @Test func sameOffsetsAndCountsAsTheModel() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<3_000 {
            let limit = round % 5
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...40, using: &generator) {
                stream += Self.pieces.randomElement(using: &generator)!.utf8
            }
            var counter = AttributeCounter(maxAttributes: limit)
            var model = ReferenceAttributeCounter(maxAttributes: limit)
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...12, using: &generator))
                let (found, expected) = stream.withUnsafeBytes { all -> (Int?, Int?) in
                    let chunk = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + size)])
                    return (counter.scan(chunk), model.scan(chunk))
                }
                let text = String(decoding: stream, as: UTF8.self)
                #expect(found == expected, "limit \(limit), chunk at \(offset): \(text)")
                #expect(counter.currentCount == model.currentCount, "limit \(limit), chunk at \(offset): \(text)")
                if found != nil || found != expected { break }  // the stream fails there
                offset += size
            }
        }
    }

    @Test func resetStartsOver() {
        var counter = AttributeCounter(maxAttributes: 1)
        var model = ReferenceAttributeCounter(maxAttributes: 1)
        for text in ["<![CDATA[ ]", "<a b='", "<a b=\"1\" "] {
            var bytes = Array(text.utf8)
            bytes.withUnsafeBytes { _ = counter.scan($0); _ = model.scan($0) }
            counter.reset()
            model.reset()
            bytes = Array("]]><a x='1' y='2'>".utf8)
            let (found, expected) = bytes.withUnsafeBytes { (counter.scan($0), model.scan($0)) }
            #expect(found == expected && found != nil, "after \(text)")
        }
    }
}

private struct ReferenceAttributeCounter {
    private enum State {
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
        case cdata(brackets: Int)
        /// Inside an end tag, a processing instruction or a declaration: until `>`.
        case otherMarkup
    }

    let maxAttributes: Int
    private var state = State.text
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
        while index < end {
            // The states that wait for one byte skip to it in one move (text, quoted values, other markup:
            // most of a stream's bytes); the others take one byte at a time.
            switch state {
            case .text:
                guard let at = Self.first(UInt8(ascii: "<"), base, from: index, end) else { return nil }
                state = .tagOpen
                index = at + 1
                continue
            case .singleQuoted:
                guard let at = Self.first(UInt8(ascii: "'"), base, from: index, end) else { return nil }
                state = .startTag
                index = at + 1
                continue
            case .doubleQuoted:
                guard let at = Self.first(UInt8(ascii: "\""), base, from: index, end) else { return nil }
                state = .startTag
                index = at + 1
                continue
            case .otherMarkup:
                guard let at = Self.first(UInt8(ascii: ">"), base, from: index, end) else { return nil }
                state = .text
                index = at + 1
                continue
            case .startTag:
                // Names and whitespace are skipped to the next byte that matters (a quote, `=` or `>`), which
                // is then taken below.
                while index < end, !Self.mattersInStartTag(base[index]) { index += 1 }
                guard index < end else { return nil }
            default:
                break
            }
            let byte = base[index]
            let here = index
            index += 1
            switch state {
            case .text, .singleQuoted, .doubleQuoted, .otherMarkup:
                break  // skipped above
            case .tagOpen:
                switch byte {
                case UInt8(ascii: "!"): state = .bang
                case UInt8(ascii: "?"), UInt8(ascii: "/"): state = .otherMarkup
                case UInt8(ascii: ">"): state = .text
                default:
                    state = .startTag
                    count = 0
                }
            case .startTag:
                switch byte {
                case UInt8(ascii: "'"): state = .singleQuoted
                case UInt8(ascii: "\""): state = .doubleQuoted
                case UInt8(ascii: ">"): state = .text
                case UInt8(ascii: "="):
                    count += 1
                    if count > maxAttributes { return here }
                default: break
                }
            case .bang:
                state = byte == UInt8(ascii: "[") ? .cdata(brackets: 0) : byte == UInt8(ascii: ">") ? .text : .otherMarkup
            case .cdata(let brackets):
                if byte == UInt8(ascii: "]") {
                    state = .cdata(brackets: brackets + 1)
                } else if byte == UInt8(ascii: ">"), brackets >= 2 {
                    state = .text
                } else if brackets != 0 {
                    state = .cdata(brackets: 0)
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
        count = 0
    }
}

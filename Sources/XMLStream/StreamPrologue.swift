/// What may come before a stream's first `<`, skipped before libxml2 sees the stream: XML whitespace and
/// UTF-8 byte-order marks (EF BB BF), in any order and any chunking.
///
/// Why: libxml2 parses each stream as one XML document, and a document may not start with anything before
/// its XML declaration (XML 1.0 §2.8). But a stream restart (RFC 6120 §4.3.3) leaves what the peer wrote
/// after `<success/>` (a newline, say) in front of the new header, and a peer may start each stream,
/// restarted ones included, with a byte-order mark (XML 1.0 §4.3.3; RFC 6120 §11.6 allows it) and then
/// an XML declaration. Skipping the prologue makes `[whitespace|BOM]* <?xml …?> <stream:stream>` and
/// `[whitespace|BOM]* <stream:stream>` parse the same on every stream.
///
/// The first other byte ends the prologue; an incomplete BOM followed by something else is handed back,
/// so libxml2 reports it as it would any bad input. Memory: three bytes of state.
struct StreamPrologue {
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Bytes of a byte-order mark matched so far (0...2), possibly across chunks.
    private(set) var markBytesMatched = 0
    /// True once the first byte of the stream's content was found.
    private(set) var isFinished = false

    enum Outcome: Equatable {
        /// Every byte of the chunk was skipped, or is held as the start of a byte-order mark: feed more.
        case skippedAll
        /// The stream's content starts at `offset` in this chunk. The first `replay` bytes of
        /// `byteOrderMark`, held from earlier chunks, turned out not to be one and precede it.
        case content(offset: Int, replay: Int)
    }

    /// Scans the next chunk; call until it returns `.content`, then feed the rest to the XML parser.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        precondition(!isFinished, "StreamPrologue.scan after the prologue ended")
        // Bytes of the current partial mark that came in earlier chunks.
        var carried = markBytesMatched
        for (index, byte) in bytes.enumerated() {
            if markBytesMatched > 0 {
                if byte == Self.byteOrderMark[markBytesMatched] {
                    markBytesMatched += 1
                    if markBytesMatched == Self.byteOrderMark.count {
                        markBytesMatched = 0
                        carried = 0
                    }
                    continue
                }
                // Not a byte-order mark after all: its bytes are content.
                let inChunk = markBytesMatched - carried
                isFinished = true
                markBytesMatched = 0
                return .content(offset: index - inChunk, replay: carried)
            }
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                continue
            case Self.byteOrderMark[0]:
                markBytesMatched = 1
                carried = 0
            default:
                isFinished = true
                return .content(offset: index, replay: 0)
            }
        }
        return .skippedAll
    }
}

import CCS
import FoundationEssentials
import Glibc

/// The intake's line rules, in one place for both ways of reading (`IntakeReader`: its thread for regular
/// files and other inputs, the loop for pipes and FIFOs): bytes in, intake items out, in input order.
///
/// - Lines end with LF. A line that is blank (only spaces, tabs and CRs) is skipped, though it counts in the
///   line numbers; any other line is validated (`IntakeItem.parsing`), and a valid message without a
///   message_id gets a unique one (`idPrefix` followed by a counter).
/// - A line longer than `maxLineBytes` is rejected (`line_too_long`, naming the limit) without being
///   buffered whole: its bytes are dropped as they come.
/// - At the end of the input, a last line without its LF counts as a line (`finish(into:)`).
///
/// The items do not depend on how the input was split into reads: `IntakeLinesTests` feeds the same bytes
/// whole, byte by byte and in other pieces and checks that the items agree.
struct IntakeLines {
    /// Longest accepted line, bytes.
    let maxLineBytes: Int
    /// What message_ids given by ccsd start with.
    let idPrefix: String
    private var nextID = 0
    /// The current line's bytes so far (empty while `oversized`).
    private var line: [UInt8] = []
    /// Whether the current line already went over `maxLineBytes`.
    private var oversized = false
    /// Lines seen so far, blank ones included.
    private(set) var lineNumber = 0

    init(maxLineBytes: Int, idPrefix: String) {
        precondition(maxLineBytes > 0, "maxLineBytes must be positive, got \(maxLineBytes)")
        self.maxLineBytes = maxLineBytes
        self.idPrefix = idPrefix
    }

    /// Takes bytes up to and including the first LF after which `batch` holds at least `limit` items (or
    /// all of `bytes`), appending an item for each line ended on the way.
    /// - Returns: how many bytes of `bytes` were taken (more than 0 unless `bytes` is empty).
    mutating func take(from bytes: UnsafeRawBufferPointer, into batch: inout [CCSDaemon.IntakeItem], limit: Int) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var start = 0
        while start < bytes.count {
            guard let found = memchr(base + start, 0x0A, bytes.count - start) else {
                append(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                return bytes.count
            }
            let end = base.distance(to: UnsafeRawPointer(found))
            append(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            finishLine(into: &batch)
            start = end + 1
            if batch.count >= limit { break }
        }
        return start
    }

    /// The input ended: a last line without its LF counts.
    mutating func finish(into batch: inout [CCSDaemon.IntakeItem]) {
        if !line.isEmpty || oversized { finishLine(into: &batch) }
    }

    private mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !oversized, !bytes.isEmpty else { return }
        if line.count + bytes.count > maxLineBytes {
            oversized = true
            line.removeAll()
        } else {
            line.append(contentsOf: bytes)
        }
    }

    private mutating func finishLine(into batch: inout [CCSDaemon.IntakeItem]) {
        lineNumber += 1
        defer {
            line.removeAll(keepingCapacity: true)
            oversized = false
        }
        if oversized {
            batch.append(.invalid(line: lineNumber, messageID: nil, error: ValidationError(
                code: .lineTooLong, field: "", rule: "the line is longer than \(maxLineBytes) bytes (max_line_bytes)")))
            return
        }
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
        let item = CCSDaemon.IntakeItem.parsing(line, line: lineNumber, now: Date())
        guard case .message(let message, let number) = item, message.messageID == nil else {
            batch.append(item)
            return
        }
        nextID += 1
        batch.append(.message(message.withMessageID(idPrefix + String(nextID)), line: number))
    }
}

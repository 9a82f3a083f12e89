import Foundation

/// Reads ccsd's events outlet (JSON lines) and finds, per line, whether it is an `accepted` or an `acked`
/// event of one of the benchmark's messages (`"message_id":"b-N"` with N below the message count), by bytes:
/// no `String`, no `Data`, no per-line allocation. The lines are compact JSON objects that start with their
/// `event` member (ccsd writes it first); any other line is skipped.
struct EventScan {
    enum Kind { case accepted, acked }

    let messages: Int
    /// Bytes read and not yet scanned are `buffer[start..<end]`; a partial last line waits for the next read.
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    private static let acceptedPrefix = Array("{\"event\":\"accepted\"".utf8)
    private static let ackedPrefix = Array("{\"event\":\"acked\"".utf8)
    private static let idKey = Array("\"message_id\":\"b-".utf8)

    init(messages: Int, capacity: Int = 256 * 1024) {
        self.messages = messages
        buffer = [UInt8](repeating: 0, count: capacity)
    }

    /// Reads once from `fd` after what is buffered (moving a partial line to the front, growing the buffer
    /// for a line longer than it). Returns read(2)'s result.
    mutating func read(_ fd: Int32) -> Int {
        if start > 0 {
            buffer.withUnsafeMutableBytes { bytes in
                _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, end - start)
            }
            end -= start
            start = 0
        }
        if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
        let count = buffer.withUnsafeMutableBytes { bytes in Glibc.read(fd, bytes.baseAddress! + end, bytes.count - end) }
        if count > 0 { end += count }
        return count
    }

    /// Calls `body` for every complete line read so far that is an event of a benchmark message, in order.
    mutating func forEachEvent(_ body: (Kind, Int) -> Void) {
        let messages = self.messages
        start = buffer.withUnsafeBytes { raw -> Int in
            let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var lineStart = start
            while lineStart < end, let newline = memchr(base + lineStart, 0x0A, end - lineStart) {
                let lineEnd = base.distance(to: newline.assumingMemoryBound(to: UInt8.self))
                let line = UnsafeBufferPointer(start: base + lineStart, count: lineEnd - lineStart)
                lineStart = lineEnd + 1
                let kind: Kind
                if Self.hasPrefix(line, Self.acceptedPrefix) {
                    kind = .accepted
                } else if Self.hasPrefix(line, Self.ackedPrefix) {
                    kind = .acked
                } else {
                    continue
                }
                if let index = Self.messageIndex(in: line), index < messages { body(kind, index) }
            }
            return lineStart
        }
    }

    private static func hasPrefix(_ line: UnsafeBufferPointer<UInt8>, _ prefix: [UInt8]) -> Bool {
        line.count >= prefix.count && prefix.withUnsafeBytes { memcmp(line.baseAddress!, $0.baseAddress!, prefix.count) == 0 }
    }

    /// N of the first `"message_id":"b-N` in `line` (its leading ASCII digits), or nil.
    private static func messageIndex(in line: UnsafeBufferPointer<UInt8>) -> Int? {
        // memmem is not imported (a GNU extension): each quote found by memchr is tried as the key's start.
        let base = line.baseAddress!
        var from = 0
        var found: Int?
        while from + idKey.count <= line.count,
              let quote = memchr(base + from, 0x22, line.count - idKey.count - from + 1) {
            let at = base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
            if idKey.withUnsafeBytes({ memcmp(base + at, $0.baseAddress!, idKey.count) == 0 }) {
                found = at
                break
            }
            from = at + 1
        }
        guard let found else { return nil }
        var at = found + idKey.count
        var value = 0, digits = 0
        while at < line.count, line[at] >= 0x30, line[at] <= 0x39 {
            if digits < 18 { value = value * 10 + Int(line[at] - 0x30) }
            at += 1
            digits += 1
        }
        return digits > 0 && digits <= 18 ? value : nil
    }
}

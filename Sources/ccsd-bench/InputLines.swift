import Glibc

/// The benchmark's input lines, built as bytes (the same text as
/// `{"to":"bench-token-<i % 1000>-APA91bHPRgkFLJu4x","message_id":"b-<i>","data":{"score":"<i>","text":"benchmark payload <&>"},"time_to_live":600}`
/// plus LF) into one reused buffer.
struct InputLines {
    private var bytes: [UInt8] = []
    private static let head = Array(#"{"to":"bench-token-"#.utf8)
    private static let afterToken = Array(#"-APA91bHPRgkFLJu4x","message_id":"b-"#.utf8)
    private static let afterID = Array(#"","data":{"score":""#.utf8)
    private static let tail = Array(#"","text":"benchmark payload <&>"},"time_to_live":600}"#.utf8) + [0x0A]

    init() { bytes.reserveCapacity(64 * 1024) }

    var count: Int { bytes.count }

    /// Appends message `index`'s line.
    mutating func append(message index: Int) {
        bytes += Self.head
        appendDecimal(index % 1000)
        bytes += Self.afterToken
        appendDecimal(index)
        bytes += Self.afterID
        appendDecimal(index)
        bytes += Self.tail
    }

    private mutating func appendDecimal(_ value: Int) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var rest = value, length = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - length] = UInt8(truncatingIfNeeded: 0x30 + rest % 10)
                rest /= 10
                length += 1
            } while rest > 0
            bytes.append(contentsOf: buffer[(20 - length)...])
        }
    }

    /// Writes what was appended to `fd` (all of it, retrying short writes) and empties the buffer.
    mutating func write(to fd: Int32) {
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // ccsd is gone; the run reports what it saw
                }
                offset += written
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

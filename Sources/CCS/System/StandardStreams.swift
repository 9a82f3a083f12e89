import FoundationEssentials
import Glibc

/// The process's standard input and error as file descriptors 0 and 2 (what Foundation's `FileHandle` did
/// for ccsd's command line, without linking Foundation).
public enum StandardStreams {
    /// Writes `text` to standard error whole (short writes continued, interrupted ones retried); a failed
    /// write is dropped (there is nowhere left to report it).
    public static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Everything on standard input up to its end (what was read before a read error).
    public static func readInput() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }
}

extension StringProtocol {
    /// The text without the whitespace and line breaks at either end (Unicode's, `Character.isWhitespace`).
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return String(self[first...last])
    }

    /// The text without the line breaks at either end (`Character.isNewline`).
    public func trimmingNewlines() -> String {
        guard let first = firstIndex(where: { !$0.isNewline }) else { return "" }
        let last = lastIndex(where: { !$0.isNewline })!
        return String(self[first...last])
    }

    /// The text followed by spaces up to `width` characters (unchanged when it is that long already): a column.
    public func padded(to width: Int) -> String {
        let count = self.count
        return count >= width ? String(self) : String(self) + String(repeating: " ", count: width - count)
    }
}

extension BinaryInteger {
    /// The decimal digits, with leading zeros up to `digits` (`7.zeroPadded(3)` is `007`); a negative value
    /// keeps its sign in front.
    public func zeroPadded(_ digits: Int) -> String {
        let text = String(self.magnitude)
        let padded = String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
        return self < 0 ? "-" + padded : padded
    }
}

extension Double {
    /// The value with exactly three decimals, rounded (`1.5` is `1.500`): seconds to the millisecond.
    public var threeDecimals: String {
        let thousandths = Int((self * 1000).rounded())
        let sign = thousandths < 0 ? "-" : ""
        return sign + "\(abs(thousandths) / 1000)." + (abs(thousandths) % 1000).zeroPadded(3)
    }
}

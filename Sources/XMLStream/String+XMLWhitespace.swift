/// XML whitespace (XML 1.0 §2.3 S: space, tab, CR, LF) tested on UTF-8 bytes.
public enum XMLWhitespace {
    /// True when `byte` is space, tab, LF or CR.
    @inlinable
    public static func contains(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// True when text of these UTF-8 bytes may have XML whitespace to trim: its first or last byte is one. A
    /// character can equal one of the whitespace characters only if its first byte (at the start) or its last
    /// byte (at the end) is one, so false means `trimmingXMLWhitespace` returns the text as it is. Empty: false.
    @inlinable
    public static func mayTrim<Bytes: BidirectionalCollection>(_ utf8: Bytes) -> Bool where Bytes.Element == UInt8 {
        guard let first = utf8.first, let last = utf8.last else { return false }
        return contains(first) || contains(last)
    }
}

extension String {
    /// The string without leading and trailing XML whitespace (XML 1.0 §2.3 S: space, tab, CR, LF).
    public func trimmingXMLWhitespace() -> String {
        // The usual case, nothing to trim, decided on the first and last bytes.
        guard XMLWhitespace.mayTrim(utf8) else { return self }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }
}

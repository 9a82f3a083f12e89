extension String {
    /// The string without leading and trailing XML whitespace (XML 1.0 §2.3 S: space, tab, CR, LF).
    public func trimmingXMLWhitespace() -> String {
        // The usual case, nothing to trim, decided on the first and last bytes: a character can equal one of
        // the whitespace characters only if its first byte (at the start) or its last byte (at the end) is one.
        let utf8 = self.utf8
        guard let firstByte = utf8.first, let lastByte = utf8.last else { return self }
        if !Self.isXMLWhitespace(firstByte), !Self.isXMLWhitespace(lastByte) { return self }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }

    private static func isXMLWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

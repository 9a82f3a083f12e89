import CByteScan

/// Where the next byte an escaping scan must look at is: the XML escapes (`XMLWriter.appendEscaped`,
/// `XMLWriter.writeEscaped`), the JSON string escape (`JSONValue.writeString`) and the event writer's
/// plain-text check skip the bytes between with one call, sixteen bytes at a time (`ccsd_scan.h`, SSE2 on
/// x86-64). They only find candidates: what a byte becomes is decided by the one walk of each escape.
public enum ByteScan {
    /// The offset, at or after `index`, of the first byte of `bytes` that the JSON string escape looks at
    /// (below 0x20, `"`, `\`, 0xEF); `bytes.count` when there is none.
    public static func nextJSONStringSpecial(in bytes: UnsafeBufferPointer<UInt8>, from index: Int) -> Int {
        guard index < bytes.count else { return bytes.count }
        return index + ccsd_scan_json_string(bytes.baseAddress! + index, bytes.count - index)
    }

    /// True when every byte is ASCII at or above 0x20 other than `"` and `\`: JSON text that needs no escape.
    public static func isPlainJSONText(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return ccsd_scan_json_plain(base, bytes.count) == bytes.count
    }

    /// The offset, at or after `index`, of the first byte of `bytes` an XML escape looks at: in character
    /// data a C0 control other than tab and LF, `&`, `<`, `>`, 0xEF; in an attribute value also tab, LF,
    /// `"` and `'`. `bytes.count` when there is none.
    public static func nextXMLSpecial(in bytes: UnsafeBufferPointer<UInt8>, from index: Int, inAttribute: Bool) -> Int {
        guard index < bytes.count else { return bytes.count }
        return index + ccsd_scan_xml(bytes.baseAddress! + index, bytes.count - index, inAttribute ? 1 : 0)
    }
}

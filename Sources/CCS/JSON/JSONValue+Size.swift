extension JSONValue {
    /// The UTF-8 byte length of `serialized()`, computed without building the text.
    ///
    /// Used for the payload size limits of ccs-protocol.md §3, once per message at intake.
    public var serializedUTF8Count: Int {
        switch self {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .int(let i): return JSONValue.decimalDigitCount(i)
        case .double: return serialized().utf8.count
        case .number(let text): return text.utf8.count
        case .string(let s): return JSONValue.serializedUTF8Count(ofString: s)
        case .array(let a):
            var count = 2 + max(0, a.count - 1)
            for element in a { count += element.serializedUTF8Count }
            return count
        case .object(let o):
            // "{" + "}" + commas + per member: key + ":" + value.
            var count = 2 + max(0, o.count - 1)
            for (key, value) in o {
                count += JSONValue.serializedUTF8Count(ofString: key) + 1 + value.serializedUTF8Count
            }
            return count
        }
    }

    /// The UTF-8 byte length of `s` written by `writeString(_:to:)`, quotes included.
    public static func serializedUTF8Count(ofString s: String) -> Int {
        var count = 2
        for byte in s.utf8 {
            switch byte {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09: count += 2          // \" \\ \n \r \t
            case 0x00..<0x20: count += 6                          // \u00XX
            default: count += 1
            }
        }
        return count
    }

    static func decimalDigitCount(_ value: Int64) -> Int {
        if value == .min { return 20 }
        var v = value < 0 ? -value : value
        var digits = value < 0 ? 2 : 1
        while v >= 10 { v /= 10; digits += 1 }
        return digits
    }
}

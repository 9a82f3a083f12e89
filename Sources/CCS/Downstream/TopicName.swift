/// Topic name syntax: `[a-zA-Z0-9-_.~%]+` (ccs-protocol.md §3; FCM topic messaging reference).
enum TopicName {
    /// True when `name` is a non-empty run of `[a-zA-Z0-9-_.~%]`.
    static func isValid(_ name: some StringProtocol) -> Bool {
        var any = false
        for byte in name.utf8 {
            guard isAllowed(byte) else { return false }
            any = true
        }
        return any
    }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    static let rule = "must be a topic name of letters, digits and - _ . ~ % (no /topics/ inside the name)"
}

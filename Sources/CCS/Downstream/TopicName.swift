/// Topic name syntax: `[a-zA-Z0-9-_.~%]{1,900}` (ccs-protocol.md §3; FCM topic messaging reference; the
/// Firebase client SDKs refuse other names with "does not match the allowed format [a-zA-Z0-9-_.~%]{1,900}").
enum TopicName {
    /// The longest topic name, in characters (all allowed characters are ASCII, so also bytes).
    static let maximumLength = 900

    /// True when `name` is 1 to `maximumLength` characters of `[a-zA-Z0-9-_.~%]`.
    static func isValid(_ name: some StringProtocol) -> Bool {
        isRun(name, of: isAllowed, maximumLength: maximumLength)
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

    static let rule = "must be a topic name of 1 to 900 letters, digits and - _ . ~ % (no /topics/ inside the name)"
}

/// What a registration token or a device-group notification key can be, checked at intake so that a value
/// that cannot be one is refused there, not sent to come back `BAD_REGISTRATION` (which tells the app to
/// delete a token it may still need).
///
/// Rule (ccsd's, documented in README): 1 to 4096 characters of `A-Z a-z 0-9 - _ :`. FCM registration
/// tokens are base64url text with one `:` (`<instance id>:APA91b…`, about 160 characters); older GCM
/// registration IDs and notification keys are base64url (`APA91b…`). Not allowed: whitespace, control
/// characters, `/` (a topic written without its exact `/topics/` prefix), `+` `=` (standard base64 is never
/// used), any other punctuation or non-ASCII. The 4096 bound is far above any real token and keeps a
/// runaway value out of the window.
enum RegistrationToken {
    static let maximumLength = 4096

    static func isValid(_ text: some StringProtocol) -> Bool {
        isRun(text, of: isAllowed, maximumLength: maximumLength)
    }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }

    static let rule = "must be a registration token or notification key (1 to 4096 characters of A-Z a-z 0-9 - _ :) or /topics/NAME"

    /// Why `text` is not a token, in words that follow the field name; nil when it is one.
    static func problem(_ text: String) -> String? {
        if text.isEmpty { return "must not be empty: " + rule.dropFirst("must be ".count) }
        if looksLikeTopic(text) {
            return "must start with exactly /topics/ (lowercase, with the leading slash) to address a topic; a token never contains /"
        }
        if text.utf8.count > maximumLength { return rule + "; it is \(text.utf8.count) bytes long" }
        var copy = text
        if let byte = copy.withUTF8({ $0.first(where: { !isAllowed($0) }) }) {  // over the bytes: no String iteration
            let what: String
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D: what = "whitespace"
            case 0..<0x20, 0x7F: what = "a control character"
            case 0x80...: what = "a non-ASCII character"
            default: what = "'\(Character(Unicode.Scalar(byte)))'"
            }
            return rule + "; it contains \(what)"
        }
        return nil
    }

    /// A `/` anywhere, or a value naming topics: a topic target written without the exact prefix
    /// (`topics/x`, `/topic/x`, `/Topics/x`, `/topics` without a name).
    private static func looksLikeTopic(_ text: String) -> Bool {
        var copy = text
        let (slash, first) = copy.withUTF8 { ($0.contains(UInt8(ascii: "/")), $0.first) }
        if slash { return true }
        // An ASCII first byte other than t/T starts a first character whose lowercase does not start with
        // "t": no lowercased copy of the whole token then (the usual case, on every message).
        if let first, first < 0x80, first | 0x20 != UInt8(ascii: "t") { return false }
        return text.lowercased().hasPrefix("topics")
    }
}

/// True when `text` is 1 to `maximumLength` bytes, each of which `isAllowed` takes (ASCII-only rules, so
/// bytes are characters).
private func isRun(_ text: some StringProtocol, of isAllowed: (UInt8) -> Bool, maximumLength: Int) -> Bool {
    var count = 0
    for byte in text.utf8 {
        guard isAllowed(byte) else { return false }
        count += 1
    }
    return count > 0 && count <= maximumLength
}

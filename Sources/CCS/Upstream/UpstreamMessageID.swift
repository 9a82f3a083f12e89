/// The message_id of an upstream message or receipt as ccsd deduplicates and ACKs it (ccs-protocol.md §3).
///
/// JSON lets a server write a message_id with unpaired UTF-16 surrogate escapes (`"s-\ud800"`), which no
/// Swift string holds: ccsd reads them as U+FFFD (`JSONSurrogateRepair`), so `"s-\ud800"`, `"s-\udfff"` and
/// `"s-\ufffd"` all read as `s-U+FFFD`. For such an id ccsd also keeps `literal`, the JSON string literal as
/// the server wrote it: it tells the ids apart for dedupe (`key`) and is echoed verbatim in the ACK, which
/// the server matches against the id it sent.
public struct UpstreamMessageID: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The message_id as decoded (unpaired surrogates as U+FFFD): for events and logs.
    public let text: String
    /// The JSON string literal as written (quotes and escapes included), when it held an unpaired surrogate
    /// escape; nil otherwise (then `text` is the id exactly).
    public let literal: String?

    public init(text: String, literal: String? = nil) {
        self.text = text
        self.literal = literal
    }

    public init(stringLiteral value: String) { self.init(text: value) }

    /// The dedupe key, also what the store remembers for a handed-over message (`RecordRequest`): distinct
    /// for distinct ids as written. An id without a literal is its own key, except that one starting with
    /// U+FFFD gets one more U+FFFD in front; an id with a literal is U+FFFD followed by the literal, which
    /// starts with `"`. No two ids share a key, and ordinary ids keep their text as key.
    public var key: String {
        if let literal { return "\u{FFFD}" + literal }
        return text.hasPrefix("\u{FFFD}") ? "\u{FFFD}" + text : text
    }

    public var description: String { text }

    /// The `message_id` value for an ACK's JSON: `literal` verbatim when it is a well-formed JSON string
    /// literal (checked: `JSONValue.parse` reads it as one string, its lone surrogates as U+FFFD), else
    /// `text` written as a JSON string.
    public func jsonValueText() -> String {
        if let literal, Self.isStringLiteral(literal) { return literal }
        var out = ""
        JSONValue.writeString(text, to: &out)
        return out
    }

    static func isStringLiteral(_ literal: String) -> Bool {
        guard literal.utf8.count >= 2, literal.utf8.first == UInt8(ascii: "\""), literal.utf8.last == UInt8(ascii: "\"") else { return false }
        return (try? JSONValue.parse(literal))?.stringValue != nil
    }
}

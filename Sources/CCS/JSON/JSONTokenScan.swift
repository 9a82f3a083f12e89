import FoundationEssentials

/// Finds scalar tokens of a JSON text as written, with the object keys that lead to them: for what a parsed
/// value cannot tell (the written form of `2419201.0`), and for what `JSONValue.parse` refuses (a number no
/// Double holds, like `1e400`; a text that is not JSON at all, from which a message_id is still wanted).
///
/// A lexical scan, not a parser: it tracks `{`/`[` nesting, string literals (with their escapes) and the
/// key before each `:`. On valid JSON it is exact; on broken JSON it is best effort, and it never throws.
/// Limits: a key is compared after it is decoded (escapes included), but a key repeated in one
/// object yields a token per occurrence (first one wins in `firstToken`), and a text broken before a token
/// may give that token a wrong path. Nothing here decides whether a text is valid: `JSONValue.parse` does.
public struct JSONTokenScan {
    /// One scalar as written.
    public struct Token: Sendable, Equatable {
        /// `container` is the opening `{` or `[` of an object or array value (its `text` is that one byte),
        /// so that a member whose value is a container is found too.
        public enum Kind: Sendable, Equatable { case string, number, literal, container }
        public var kind: Kind
        /// Object keys from the top level down to the token; nil for an array element level.
        public var path: [String?]
        /// The token's bytes as written (a string token includes its quotes and escapes).
        public var text: String
        /// Byte range in the scanned text.
        public var range: Range<Int>

        /// The path as dotted keys (`data.count`), or nil when it passes through an array.
        public var dottedPath: String? {
            var keys: [String] = []
            for key in path {
                guard let key else { return nil }
                keys.append(key)
            }
            return keys.joined(separator: ".")
        }
    }

    /// Tokens nested deeper than this many objects and arrays are not reported (their nesting is still
    /// followed): `JSONNesting.maxDepth`, beyond which no text is read anyway. It keeps each token's cost
    /// bounded, so a scan takes time linear in the text whatever its depth.
    public static let maxDepth = JSONNesting.maxDepth

    /// Calls `visit` for every scalar token in document order, down to `maxDepth` levels; `visit` returns
    /// false to stop. Linear in the text: the key path is kept up to date as the scan goes, not rebuilt.
    public static func scan(_ bytes: [UInt8], _ visit: (Token) -> Bool) {
        var path: [String?] = []       // one entry per open object (its current key) or array (nil)
        var isObject: [Bool] = []      // parallel to `path`
        var hidden = 0                 // levels open beyond `maxDepth`, whose tokens are not reported
        var expectingKey = false
        var index = 0
        let count = bytes.count

        func open(_ object: Bool, _ text: String) -> Bool {
            if hidden == 0, !visit(Token(kind: .container, path: path, text: text, range: index..<index + 1)) { return false }
            if hidden == 0, path.count < maxDepth {
                path.append(nil)
                isObject.append(object)
            } else {
                hidden += 1
            }
            expectingKey = object
            index += 1
            return true
        }

        while index < count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"):
                if !open(true, "{") { return }
            case UInt8(ascii: "["):
                if !open(false, "[") { return }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if hidden > 0 {
                    hidden -= 1
                } else {
                    _ = path.popLast()
                    _ = isObject.popLast()
                }
                expectingKey = false
                index += 1
            case UInt8(ascii: ","):
                if hidden == 0, isObject.last == true { expectingKey = true }
                index += 1
            case UInt8(ascii: ":"):
                expectingKey = false
                index += 1
            case UInt8(ascii: "\""):
                let end = endOfString(bytes, from: index)
                if hidden > 0 {
                    // deeper than reported: skipped
                } else if expectingKey, isObject.last == true {
                    path[path.count - 1] = decodeString(bytes[index..<end])
                    expectingKey = false
                } else if !visit(Token(kind: .string, path: path, text: String(decoding: bytes[index..<end], as: UTF8.self), range: index..<end)) {
                    return
                }
                index = end
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                var end = index + 1
                while end < count, isNumberByte(bytes[end]) { end += 1 }
                if hidden == 0, !visit(Token(kind: .number, path: path, text: String(decoding: bytes[index..<end], as: UTF8.self), range: index..<end)) {
                    return
                }
                index = end
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                var end = index + 1
                while end < count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[end]) { end += 1 }
                if hidden == 0, !visit(Token(kind: .literal, path: path, text: String(decoding: bytes[index..<end], as: UTF8.self), range: index..<end)) {
                    return
                }
                index = end
            default:
                index += 1  // whitespace, or a byte that makes the text invalid anyway
            }
        }
    }

    /// The first token whose path is exactly `keys` (objects all the way down).
    public static func firstToken(at keys: [String], in bytes: [UInt8]) -> Token? {
        var found: Token?
        scan(bytes) { token in
            guard token.path.count == keys.count, zip(token.path, keys).allSatisfy({ $0 == $1 }) else { return true }
            found = token
            return false
        }
        return found
    }

    /// A top-level string member, decoded as `JSONValue.parse` decodes strings (lone surrogates as U+FFFD); nil
    /// when absent, not a string, or not decodable. For recovering `message_id` and `from` from a refused text.
    public static func topLevelString(_ key: String, in bytes: [UInt8]) -> String? {
        guard let token = firstToken(at: [key], in: bytes), token.kind == .string else { return nil }
        return decodeString(bytes[token.range])
    }

    /// The JSON string literal of top-level member `key` exactly as written (quotes and escapes included),
    /// when it holds an unpaired UTF-16 surrogate escape: ccsd reads those as U+FFFD (`JSONSurrogateRepair`),
    /// so distinct literals (`"s-\ud800"`, `"s-\udfff"`) decode to one text and only
    /// the literal tells them apart. nil when the member is absent, not a string, or has no such escape.
    public static func unpairedSurrogateLiteral(_ key: String, in bytes: [UInt8]) -> String? {
        guard let token = firstToken(at: [key], in: bytes), token.kind == .string,
              JSONSurrogateRepair.repaired(Data(bytes[token.range])) != nil else { return nil }
        return token.text
    }

    /// Number tokens that no Double can hold (`1e400`, `-2e308`): `JSONValue.parse` refuses the whole text for one.
    /// (An integer beyond a Double, `1` and 400 zeros, is read: as its text.)
    public static func unrepresentableNumbers(in bytes: [UInt8]) -> [Token] {
        numbers(in: bytes) { JSONValue.isNumberText($0) && JSONValue(numberText: $0) == nil }
    }

    /// Number tokens whose text `isIncluded` accepts, in document order.
    static func numbers(in bytes: [UInt8], where isIncluded: (String) -> Bool) -> [Token] {
        var found: [Token] = []
        scan(bytes) { token in
            if token.kind == .number, isIncluded(token.text) { found.append(token) }
            return true
        }
        return found
    }

    /// `bytes` with each token's range replaced by `replacement`, followed by spaces to the token's length
    /// when it is shorter, so that every byte offset stays true (ranges in document order, not overlapping;
    /// a replacement longer than its token shifts what follows).
    public static func replacing(_ tokens: [Token], with replacement: String, in bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var position = 0
        for token in tokens.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) where token.range.lowerBound >= position {
            out.append(contentsOf: bytes[position..<token.range.lowerBound])
            out.append(contentsOf: replacement.utf8)
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: max(0, token.range.count - replacement.utf8.count)))
            position = token.range.upperBound
        }
        out.append(contentsOf: bytes[position...])
        return out
    }

    // MARK: Helpers

    /// The index just past the closing quote of the string starting at `start` (or the end of the text).
    /// Also `JSONArrayElements`' string skip.
    static func endOfString(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return bytes.count
    }

    /// A byte of a number token as the scan takes one (digits, `-+.eE`). Also `JSONFrontDoor.isCutShort`'s.
    static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
             UInt8(ascii: "e"), UInt8(ascii: "E"):
            return true
        default:
            return false
        }
    }

    /// The value of a hex digit (`0-9a-fA-F`), or nil: `JSONSurrogateRepair`'s `\uXXXX` reading and
    /// `JSONFrontDoor.isCutShort`'s.
    static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A string literal (quotes included) decoded as a JSON text of its own.
    private static func decodeString(_ literal: ArraySlice<UInt8>) -> String? {
        if !literal.contains(UInt8(ascii: "\\")), literal.count >= 2, literal.last == UInt8(ascii: "\"") {
            return String(decoding: literal.dropFirst().dropLast(), as: UTF8.self)  // the common case: no escapes
        }
        return literal.withUnsafeBytes { try? JSONFrontDoor.parse($0) }?.stringValue
    }
}

extension JSONValue {
    /// Parses like `parse(_:)`, but a number no Double holds (`1e400`), which makes `parse` refuse the whole
    /// text, reads as `null` and is returned in `replaced` (its path and written form), so the caller can say
    /// which field failed. For the second try after `parse(_:)` failed.
    /// - Throws: `ParseError` when the text is not JSON for another reason too.
    public static func parseReplacingUnrepresentableNumbers(_ data: Data) throws(ParseError) -> (value: JSONValue, replaced: [JSONTokenScan.Token]) {
        var bytes = [UInt8](data)
        _ = JSONSurrogateRepair.repair(&bytes)
        let replaced = JSONTokenScan.unrepresentableNumbers(in: bytes)
        if !replaced.isEmpty { bytes = JSONTokenScan.replacing(replaced, with: "null", in: bytes) }
        return (try parse(Data(bytes)), replaced)
    }
}

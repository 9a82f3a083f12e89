/// Syntax check of a topic `condition` (ccs-protocol.md §3; FCM "Send messages to topics").
///
/// Grammar (whitespace allowed between tokens):
/// ```
/// expression := operand (("&&" | "||") operand)*
/// operand    := "'" TOPIC "'" "in" "topics" | "(" expression ")"
/// ```
/// At most two `&&`/`||` operators in the whole condition. `!` is refused: the legacy XMPP/HTTP references
/// list only `&&` and `||`, and `!` appears only in later v1-era documentation (docs/v1-mapping.md).
/// Topic names in quotes follow `TopicName`. Only single quotes, as in every FCM example.
enum Condition {
    /// The largest number of `&&`/`||` operators CCS accepts.
    static let maximumOperators = 2
    /// Parenthesis nesting limit, so that hostile input cannot exhaust the stack.
    static let maximumDepth = 8

    static let syntaxRule = "must be 'TOPIC' in topics terms joined by && or || with optional parentheses"

    /// Checks `condition`; throws a `ValidationError` on `field` when it is not valid.
    static func check(_ condition: String, field: String) throws(ValidationError) {
        var parser = Parser(bytes: Array(condition.utf8))
        let failure: String?
        do {
            try parser.expression(depth: 0)
            parser.skipSpace()
            failure = parser.index == parser.bytes.count ? nil : "unexpected text at offset \(parser.index)"
        } catch {
            failure = error.reason
        }
        if let failure {
            throw ValidationError(
                code: .conditionSyntax, field: field, rule: syntaxRule + " (\(failure))",
                value: ValidationError.render(.string(condition)))
        }
        if parser.operators > maximumOperators {
            throw ValidationError(
                code: .conditionOperators, field: field,
                rule: "must have at most two operators (&&, ||); this one has \(parser.operators)",
                value: ValidationError.render(.string(condition)))
        }
    }

    struct SyntaxFailure: Error { var reason: String }

    struct Parser {
        let bytes: [UInt8]
        var index = 0
        var operators = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }

        mutating func expression(depth: Int) throws(SyntaxFailure) {
            try operand(depth: depth)
            while true {
                skipSpace()
                guard index + 1 < bytes.count else { return }
                let pair = (bytes[index], bytes[index + 1])
                guard pair == (0x26, 0x26) || pair == (0x7C, 0x7C) else { return }  // && or ||
                index += 2
                operators += 1
                try operand(depth: depth)
            }
        }

        mutating func operand(depth: Int) throws(SyntaxFailure) {
            skipSpace()
            guard index < bytes.count else { throw SyntaxFailure(reason: "ends where a term was expected") }
            switch bytes[index] {
            case UInt8(ascii: "("):
                guard depth < Condition.maximumDepth else { throw SyntaxFailure(reason: "parentheses nested too deep") }
                index += 1
                try expression(depth: depth + 1)
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ")") else {
                    throw SyntaxFailure(reason: "missing )")
                }
                index += 1
            case UInt8(ascii: "'"):
                index += 1
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "'") {
                    guard TopicName.isAllowed(bytes[index]) else {
                        throw SyntaxFailure(reason: "topic names are letters, digits and - _ . ~ %")
                    }
                    index += 1
                }
                guard index < bytes.count else { throw SyntaxFailure(reason: "missing closing '") }
                guard index > start else { throw SyntaxFailure(reason: "empty topic name") }
                guard index - start <= TopicName.maximumLength else {
                    throw SyntaxFailure(reason: "a topic name is at most \(TopicName.maximumLength) characters")
                }
                index += 1
                try keyword("in")
                try keyword("topics")
            case UInt8(ascii: "!"):
                throw SyntaxFailure(reason: "! is not supported over XMPP; only && and ||")
            case UInt8(ascii: "\""):
                throw SyntaxFailure(reason: "topic names are quoted with ' not \"")
            default:
                throw SyntaxFailure(reason: "unexpected text at offset \(index)")
            }
        }

        mutating func keyword(_ word: StaticString) throws(SyntaxFailure) {
            skipSpace()
            let count = word.utf8CodeUnitCount
            let end = index + count
            let matches = end <= bytes.count && word.withUTF8Buffer { buffer in
                buffer.elementsEqual(bytes[index..<end])
            }
            // The keyword must end there: "topicsX" is not "topics".
            guard matches, end == bytes.count || !Self.isWordByte(bytes[end]) else {
                throw SyntaxFailure(reason: "expected '\(word)' at offset \(index)")
            }
            index = end
        }

        static func isWordByte(_ byte: UInt8) -> Bool {
            TopicName.isAllowed(byte) && byte != UInt8(ascii: "%")
        }
    }
}

import FoundationEssentials

/// Turns one intake line into a validated `DownstreamMessage`, so that a message CCS would reject never
/// takes a slot in the 100-message window (ccs-protocol.md §3, §5).
///
/// Accepts the legacy XMPP JSON object, or FCM's v1 request shape `{"message": {…}}` (optionally with
/// `"validate_only"`), which is translated (see `translateV1(_:now:)` and docs/v1-mapping.md).
public enum DownstreamIntake {
    /// Parses, translates when v1-shaped, and validates one line. The common legacy message takes a shortcut
    /// (`parseCommonShape`) that gives the same result; everything else, and every error, comes from the full path.
    ///
    /// What `JSONValue.parse` refuses is still reported by field where possible: a lone surrogate escape reads
    /// as U+FFFD; a number no Double holds (`1e400`) reads as null, so that its field's own rule names it (or,
    /// if no rule does, a rule about the number); other lines are "not valid JSON" with the parser's reason
    /// and byte offset, and the field whose value holds that byte. Numbers in errors are quoted as written in
    /// the line (`2419201.0`, not `2419201`):
    /// the token is found again in the raw line by the field's key path (`JSONTokenScan`). Limits: only
    /// paths made of object keys (not array elements); a key written with escapes is matched after decoding.
    /// - Parameters:
    ///   - line: one JSON text (UTF-8).
    ///   - now: the clock reading used to turn `apns-expiration` (an absolute time) into a time_to_live.
    /// - Returns: the message, or the first `ValidationError`; field "" when the line is not a JSON object.
    public static func parse(line: Data, now: Date) -> Result<DownstreamMessage, ValidationError> {
        if let message = line.withUnsafeBytes({ parseCommonShape($0) }) { return .success(message) }
        return parseFully(line: line, now: now)
    }

    /// `parse(line:now:)` over the line's bytes, which are copied into a `Data` only when the line is not
    /// of the common shape (`parseCommonShape`).
    public static func parse(utf8 line: [UInt8], now: Date) -> Result<DownstreamMessage, ValidationError> {
        if let message = line.withUnsafeBytes({ parseCommonShape($0) }) { return .success(message) }
        return parseFully(line: Data(line), now: now)
    }

    /// `parse(line:now:)` without the shortcut of `parseCommonShape`: the source of every error text.
    static func parseFully(line: Data, now: Date) -> Result<DownstreamMessage, ValidationError> {
        // The raw line is never echoed: it may hold a registration token.
        let value: JSONValue
        var unrepresentable: [JSONTokenScan.Token] = []
        do {
            value = try JSONValue.parse(line)
        } catch {
            guard error.message != JSONNesting.rule else { return .failure(notJSON(line, error)) }  // no second try: as deep
            // A number no Double holds read as null (its field is named below); when the text is still refused,
            // the error past such numbers (their replacement keeps every byte offset).
            switch Result(catching: { () throws(JSONValue.ParseError) in try JSONValue.parseReplacingUnrepresentableNumbers(line) }) {
            case .success(let lenient) where !lenient.replaced.isEmpty:
                value = lenient.value
                unrepresentable = lenient.replaced
            case .success:
                return .failure(notJSON(line, error))
            case .failure(let lenientError):
                return .failure(notJSON(line, lenientError))
            }
        }
        guard case .object(let object) = value else {
            return .failure(ValidationError(
                code: .notJSONObject, field: "", rule: "the line is not a JSON object", value: "a JSON \(value.typeName)"))
        }
        let result: Result<DownstreamMessage, ValidationError>
        do throws(ValidationError) {
            if object["message"] != nil {
                result = .success(try translateV1Request(object, now: now))
            } else {
                result = .success(try validate(object))
            }
        } catch {
            return .failure(quotingWrittenNumber(error, object, line))
        }
        if let number = unrepresentable.first {
            // Read as null, yet no rule refused it: refuse it here rather than send a null the app never wrote.
            return .failure(ValidationError(
                code: .type, field: number.dottedPath ?? "",
                rule: "must be a number a 64-bit float can hold (this one is beyond about 1.8e308)",
                value: ValidationError.truncate(number.text)))
        }
        return result
    }

    /// The error for a line that is not JSON: not UTF-8, empty, cut short, or broken at a byte (the reason
    /// and byte offset from `JSONValue.parse`, and the field whose value holds that byte).
    static func notJSON(_ line: Data, _ error: JSONValue.ParseError) -> ValidationError {
        if String(validating: line, as: UTF8.self) == nil {
            return ValidationError(code: .notJSONObject, field: "", rule: "the line is not valid UTF-8 text, so not a JSON object")
        }
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return ValidationError(code: .notJSONObject, field: "", rule: "the line is empty, not a JSON object")
        }
        if error.endsEarly {
            return ValidationError(code: .notJSONObject, field: "",
                                   rule: "the line is not valid JSON: it ends before the JSON text is complete (after \(line.count) bytes; truncated?)")
        }
        let field = error.offset.map { Self.field(at: $0, in: [UInt8](line)) } ?? ""
        return ValidationError(code: .notJSONObject, field: field, rule: "the line is \(error.message)")
    }

    /// The field whose value holds the byte at `position`, found by the token scan; "" when it is not inside
    /// a value (a key, punctuation).
    static func field(at position: Int, in bytes: [UInt8]) -> String {
        var field = ""
        JSONTokenScan.scan(bytes) { token in
            guard token.range.lowerBound <= position else { return false }
            if token.range.contains(position) {
                field = token.dottedPath ?? ""
                return false
            }
            return true
        }
        return field
    }

    /// `error` with its value replaced by the number token as written in `line`, when the field is a number.
    static func quotingWrittenNumber(_ error: ValidationError, _ object: [String: JSONValue], _ line: Data) -> ValidationError {
        guard error.value != nil, !error.field.isEmpty, let keys = keyPath(error.field, in: .object(object)) else { return error }
        guard let token = JSONTokenScan.firstToken(at: keys, in: [UInt8](line)), token.kind == .number else { return error }
        var quoted = error
        quoted.value = ValidationError.truncate(token.text)
        return quoted
    }

    /// The object keys a dotted field path names in `value` (keys may contain dots: `data.google.sent_time`),
    /// when it ends at a number or at null (a number read as null); nil otherwise.
    static func keyPath(_ field: Substring, in value: JSONValue) -> [String]? {
        guard case .object(let object) = value else { return nil }
        var best: [String]?
        for (key, element) in object where field == key || field.hasPrefix(key + ".") {
            let rest = field.dropFirst(key.count)
            let found: [String]?
            if rest.isEmpty {
                switch element {
                case .int, .double, .number, .null: found = [key]
                default: found = nil
                }
            } else {
                found = keyPath(rest.dropFirst(), in: element).map { [key] + $0 }
            }
            if let found, best == nil || found.count < best!.count { best = found }
        }
        return best
    }

    static func keyPath(_ field: String, in value: JSONValue) -> [String]? {
        keyPath(Substring(field), in: value)
    }

    /// Parses one line held in a string; see `parse(line:now:)` for `Data`.
    public static func parse(line: some StringProtocol, now: Date) -> Result<DownstreamMessage, ValidationError> {
        parse(line: Data(line.utf8), now: now)
    }
}

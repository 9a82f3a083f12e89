import Foundation

/// Turns one intake line into a validated `DownstreamMessage`, so that a message CCS would reject never
/// takes a slot in the 100-message window (ccs-protocol.md §3, §5).
///
/// Accepts the legacy XMPP JSON object, or FCM's v1 request shape `{"message": {…}}` (optionally with
/// `"validate_only"`), which is translated (see `translateV1(_:now:)` and docs/v1-mapping.md).
public enum DownstreamIntake {
    /// Parses, translates when v1-shaped, and validates one line.
    /// - Parameters:
    ///   - line: one JSON text (UTF-8).
    ///   - now: the clock reading used to turn `apns-expiration` (an absolute time) into a time_to_live.
    /// - Returns: the message, or the first `ValidationError`; field "" when the line is not a JSON object.
    public static func parse(line: Data, now: Date) -> Result<DownstreamMessage, ValidationError> {
        // The raw line is never echoed: it may hold a registration token.
        guard let value = try? JSONValue.parse(line) else {
            return .failure(ValidationError(code: .notJSONObject, field: "", rule: "the line is not a JSON object"))
        }
        guard case .object(let object) = value else {
            return .failure(ValidationError(
                code: .notJSONObject, field: "", rule: "the line is not a JSON object", value: "a JSON \(value.typeName)"))
        }
        do throws(ValidationError) {
            if object["message"] != nil {
                return .success(try translateV1Request(object, now: now))
            }
            return .success(try validate(object))
        } catch {
            return .failure(error)
        }
    }

    /// Parses one line held in a string; see `parse(line:now:)` for `Data`.
    public static func parse(line: some StringProtocol, now: Date) -> Result<DownstreamMessage, ValidationError> {
        parse(line: Data(line.utf8), now: now)
    }
}

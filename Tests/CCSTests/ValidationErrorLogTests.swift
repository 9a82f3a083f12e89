import CCS
import Foundation
import Testing

/// `ValidationError.logDescription`: what a log line may say about a rejected line (issue 7 item 9).
@Suite struct ValidationErrorLogTests {
    static let secret = "SECRETMARK"

    /// Lines breaking rules with a secret in the offending value, legacy and v1.
    static let lines = [
        #"{"to":"/AAAA\#(secret)xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","data":{"k":"v"}}"#,
        #"{"registration_ids":"AAAA\#(secret)"}"#,
        #"{"condition":"'AAAA\#(secret)' in topics ||"}"#,
        #"{"to":"abcdefghijklmnop","notification":{"color":"\#(secret)"}}"#,
        #"{"to":"abcdefghijklmnop","data":{"k":[\#(secret.count), "\#(secret)"]}}"#,
        #"{"to":"abcdefghijklmnop","time_to_live":"\#(secret)"}"#,
        #"{"message":{"token":"/\#(secret)"}}"#,
        #"{"message":{"token":"abcdefghijklmnop","android":{"notification":{"title":"\#(secret)1"}},"apns":{"payload":{"aps":{"alert":{"title":"\#(secret)2"}}}}}}"#,
    ]

    @Test func logDescriptionCarriesTheFieldAndAFixedRuleButNoValue() throws {
        for line in Self.lines {
            guard case .failure(let error) = DownstreamIntake.parse(line: line, now: Date()) else {
                Issue.record("not rejected: \(line)")
                continue
            }
            #expect(error.description.contains(Self.secret) || error.rule.contains(Self.secret) || error.code == .conflict,
                    "the precise error (for the event) should still show the value: \(error.description)")
            #expect(!error.logDescription.contains(Self.secret), "\(error.logDescription)")
            #expect(error.logDescription == "\(ValidationError.logSafeField(error.field)): \(error.code.logSummary)")
        }
    }

    /// An app's data keys are message content: logs show their length only.
    @Test func dataKeysAreNotLogged() {
        #expect(ValidationError.logSafeField("data.googlePAYLOADSENTINEL") == "data.…(21)")
        #expect(ValidationError.logSafeField("message.android.data.from") == "message.android.data.…(4)")
        #expect(ValidationError.logSafeField("data") == "data")
        #expect(ValidationError.logSafeField("message.data") == "message.data")
    }

    @Test func longFieldComponentsAreShortenedLikeTokens() {
        let key = String(repeating: "k", count: 8) + Self.secret + String(repeating: "k", count: 40)
        let error = ValidationError(code: .dataValue, field: "data." + key, rule: "must be a string", value: "1")
        #expect(error.logDescription == "data.…(\(key.count)): must be a string (data values are strings)")
        #expect(ValidationError.logSafeField("notification.title") == "notification.title")
        #expect(ValidationError.logSafeField("kkkkkkkk\(Self.secret)kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk")
                == "kkkkkkkk…(\(Self.secret.count + 44))")
        #expect(ValidationError(code: .lineTooLong, field: "", rule: "the line is longer than 65536 bytes").logDescription
                == "the line is too long")
    }
}

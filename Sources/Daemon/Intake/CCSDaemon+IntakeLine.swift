import CCS
import FoundationEssentials

extension CCSDaemon.IntakeItem {
    /// One message's JSON text validated as an intake line (`DownstreamIntake.parse(line:now:)`), the same
    /// for a line of `ccsd run` and a message of `POST /v1/messages`: a valid message (message_id as given,
    /// possibly nil), or why it was refused, naming the message when its text has a readable message_id.
    /// - Parameters:
    ///   - bytes: the message's text exactly as written.
    ///   - line: its 1-based position (the input line; the message's place in its request).
    public static func parsing(_ bytes: [UInt8], line: Int, now: Date) -> CCSDaemon.IntakeItem {
        switch DownstreamIntake.parse(utf8: bytes, now: now) {
        case .success(let message):
            return .message(message, line: line)
        case .failure(let error):
            // A text that is not JSON may still carry a readable message_id (found lexically).
            let data = Data(bytes)
            let value = try? JSONValue.parse(data)
            let messageID = value?["message_id"]?.stringValue ?? value?["message"]?["message_id"]?.stringValue
                ?? (value == nil ? JSONTokenScan.topLevelString("message_id", in: bytes) : nil)
            return .invalid(line: line, messageID: messageID, error: error)
        }
    }
}

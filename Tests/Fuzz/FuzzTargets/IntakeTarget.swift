import CCS
import CCSEmulator
import Foundation
import XMLStream

/// One intake line of any bytes through `DownstreamIntake.parse` (validation and v1 translation), and the
/// accepted message's trip to the server.
///
/// Input: the line (any bytes).
///
/// Invariants: no crash; a refusal names a rule; an accepted message is valid, reads back from its own JSON
/// as the same message, and its stanza (`CCSStanza.downstream`, message_id assigned when the line had
/// none), read as the server reads it (`XMLStreamParser` under a client stream, then
/// `ClientPayload.classify` as the emulator does), is one downstream message with that message_id and
/// target, whose `gcm` text is exactly the JSON ccsd wrote.
enum IntakeTarget {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    static func run(_ input: [UInt8]) -> [String] {
        var violations: [String] = []
        switch DownstreamIntake.parse(line: Data(input), now: now) {
        case .failure(let error):
            if error.rule.isEmpty { violations.append("a refusal without a rule: \(error)") }
        case .success(let accepted):
            do { try accepted.validate() } catch { violations.append("accepted yet invalid: \(error)") }
            let message = accepted.messageID == nil ? accepted.withMessageID("fuzz-assigned-1") : accepted
            let json = message.jsonString()
            if (try? JSONValue.parse(json)) != message.jsonValue() {
                violations.append("jsonString and jsonValue disagree: \(json)")
            }
            if (try? DownstreamIntake.parse(line: json, now: now).get()) != message {
                violations.append("the message does not read back from its own JSON: \(json)")
            }
            checkServerSide(message, json: json, &violations)
        }
        return violations
    }

    static func checkServerSide(_ message: DownstreamMessage, json: String, _ violations: inout [String]) {
        let messageID = message.messageID!
        let stanza = CCSStanza.downstream(messageID: messageID, json: json)
        let run = StreamRun.feed(Invariants.clientStreamHeader + Array(stanza.utf8))
        guard run.error == nil, run.stanzas.count == 1, let read = run.stanzas.first else {
            violations.append("the server cannot read the stanza (\(String(describing: run.error))): \(stanza)")
            return
        }
        let text = read.child("gcm", namespace: XMLNamespace.gcm)?.text
        if text != json {
            violations.append("the server reads other JSON than ccsd wrote:\n  wrote \(json)\n  read  \(text ?? "no gcm")")
        }
        let target: String? = switch message.target {
        case .token(let token): token
        case .topic(let name): "/topics/" + name
        case .condition(let condition): condition
        }
        let payload = ClientPayload.classify(read)
        guard case .downstream(let downstream) = payload, downstream.messageID == messageID, downstream.target == target,
              downstream.deliveryReceiptRequested == (message.deliveryReceiptRequested ?? false)
        else {
            violations.append("the server reads \(payload), expected a downstream message \(messageID) to \(target ?? "nothing")")
            return
        }
        if read.attribute("id") != messageID, isXMLText(messageID) {
            violations.append("the stanza id reads back as \(String(describing: read.attribute("id"))), not \(messageID)")
        }
    }
}

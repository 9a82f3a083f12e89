import Foundation
import Testing
import XMLStream
@testable import CCS
@testable import CCSEmulator

/// Every stanza shape the emulator writes reads through the JSON front door exactly as through Foundation
/// alone, and the well-formed ones are read by simdjson (not declined): acks (plain, canonical id, device
/// group, device group with counts no integer type holds), nacks of every code, receipts, upstream with
/// entities and non-BMP characters, control, and the poison upstream payloads.
@Suite struct JSONFrontDoorShapesTests {
    static let token = "c2LufYNuydk9sgEWl2agE4:APA91baE-Yhc3a-LcBfS83Cedu3QlYJJJbgIQrBc5O_x2A7CzMp1GAawTCEe6OQxLdU"

    /// The `gcm` texts, from the emulator's own writers.
    static func shapes() -> [(name: String, json: String, wellFormed: Bool)] {
        var policy = DownstreamPolicy(rules: NackRule.defaults, nackRate: 0, seed: 1)
        var shapes: [(String, String, Bool)] = []
        for target in [token, "canon-\(token)", "group-abc", "group-unusual-abc", "bad-\(token)", "unreg-x"] {
            // A `group-unusual-` ack has `1e400`, which Foundation refuses: declined, read by the lenient path.
            shapes.append(("reply to \(target)", policy.decide(messageID: "m-1", target: target, attempt: 1).json,
                           !target.hasPrefix("group-unusual-")))
        }
        shapes.append(("reply without to", policy.decide(messageID: "m-2", target: nil, attempt: 1).json, true))
        let codes: [CCSErrorCode] = [.badRegistration, .deviceUnregistered, .senderIDMismatch, .invalidJSON, .invalidAPNSCredential,
                                     .authenticationFailed, .badACK, .serviceUnavailable, .internalServerError,
                                     .deviceMessageRateExceeded, .topicsMessageRateExceeded, .connectionDraining, "SOMETHING_NEW"]
        for code in codes {
            shapes.append(("nack \(code)", DownstreamPolicy.nack(messageID: "m-3", from: token, code: code,
                                                                 description: DownstreamPolicy.describe(code, token)), true))
        }
        // Receipt and upstream, written as `sendReceipt` and `sendUpstream` write them.
        var receiptData = OrderedJSON()
        receiptData.add("message_status", "MESSAGE_SENT_TO_DEVICE")
        receiptData.add("original_message_id", "m-4")
        receiptData.add("device_registration_id", token)
        receiptData.add("message_sent_timestamp", "1764500000000")
        var receipt = OrderedJSON()
        receipt.add("category", "com.example")
        receipt.add("data", raw: receiptData.text)
        receipt.add("message_id", "dr2:m-4")
        receipt.add("message_type", "receipt")
        receipt.add("time_to_live", .int(0))
        receipt.add("from", "gcm.googleapis.com")
        shapes.append(("receipt", receipt.text, true))
        var upstreamData = OrderedJSON()
        upstreamData.add("text", CCSEmulator.upstreamText)
        upstreamData.add("n", "7")
        var upstream = OrderedJSON()
        upstream.add("category", "com.example.app")
        upstream.add("data", raw: upstreamData.text)
        upstream.add("message_id", "up-7")
        upstream.add("from", "device-7")
        upstream.add("time_to_live", .int(86400))
        shapes.append(("upstream", upstream.text, true))
        shapes.append(("upstream with escaped non-BMP", #"{"data":{"t":"\ud83d\ude00 \u00e9 &amp; <"},"message_id":"up-8","from":"d"}"#, true))
        let control = #"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#
        #expect(ServerStanzas.connectionDraining.contains("CONNECTION_DRAINING"))
        shapes.append(("control", control, true))
        for payload in CCSEmulator.poisonUpstreamPayloads + CCSEmulator.poisonUpstreamUnrecoverable {
            shapes.append(("poison \(payload.messageID)", payload.json, false))
        }
        return shapes
    }

    @Test func emulatorShapesReadAsBefore() throws {
        for shape in Self.shapes() {
            let data = Data(shape.json.utf8)
            let front = Result { () throws(JSONValue.ParseError) in try JSONValue.parse(data) }
            let old = JSONFrontDoor.$foundationOnly.withValue(true) { Result { () throws(JSONValue.ParseError) in try JSONValue.parse(data) } }
            #expect(front == old, "\(shape.name)")
            #expect(front.map { $0.serialized() } == old.map { $0.serialized() }, "\(shape.name)")
            let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                                    children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: shape.json)])
            let inbound = Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            let oldInbound = JSONFrontDoor.$foundationOnly.withValue(true) {
                Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            }
            #expect(inbound == oldInbound, "\(shape.name)")
            if shape.wellFormed {
                #expect(data.withUnsafeBytes { JSONFrontDoor.parseWithLibrary($0) } != nil, "\(shape.name) declined")
            }
        }
    }
}

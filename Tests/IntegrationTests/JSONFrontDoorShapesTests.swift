import Foundation
import JSONReference
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
            let old = FoundationJSON.withReference { Result { () throws(JSONValue.ParseError) in try JSONValue.parse(data) } }
            // Values identical; a text both refuse, refused with a place (Foundation's words were its own).
            switch (front, old) {
            case (.success(let value), .success(let oldValue)):
                #expect(value == oldValue && value.serialized() == oldValue.serialized(), "\(shape.name)")
            case (.failure(let error), .failure):
                #expect(error.offset != nil || error.message == JSONNesting.rule, "\(shape.name): \(error)")
            default:
                Issue.record("\(shape.name): \(front) vs Foundation \(old)")
            }
            let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                                    children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: shape.json)])
            let inbound = Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            let oldInbound = FoundationJSON.withReference {
                Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            }
            #expect(inbound.map(FoundationJSON.withoutParserWords).mapError(FoundationJSON.withoutParserWords)
                    == oldInbound.map(FoundationJSON.withoutParserWords).mapError(FoundationJSON.withoutParserWords), "\(shape.name)")
            if shape.wellFormed {
                #expect(data.withUnsafeBytes { JSONFrontDoor.parseWithLibrary($0) } != nil, "\(shape.name) declined")
            }
        }
    }

    /// The stream parser's payload shortcut agrees with the general path on the emulator's wire stanzas: each
    /// shape written as the emulator writes it (plain and prefixed `gcm`, the plain-ack writer, the stanza
    /// error), fed in one piece and byte by byte, reads through `feed(_:payload:_:)` and
    /// `InboundMessage.parse(payload:)` as through the built element and `InboundMessage.parse(stanza:)`.
    @Test func emulatorStanzasReadThroughThePayloadShortcutAsThroughTheirElements() {
        let header = "<stream:stream from='gcm.googleapis.com' id='s1' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
        var wire: [(name: String, stanza: [UInt8], shortcut: Bool)] = []
        for shape in Self.shapes() {
            wire.append((shape.name, Array(ServerStanzas.message(json: shape.json).utf8), true))
            wire.append((shape.name + " prefixed", Array(ServerStanzas.message(json: shape.json, prefixed: true).utf8), true))
        }
        var plainAck: [UInt8] = []
        #expect(ServerStanzas.appendPlainAck(from: Self.token, messageID: "m-9", to: &plainAck))
        wire.append(("plain ack writer", plainAck, true))
        wire.append(("stanza error", Array(ServerStanzas.stanzaError(id: "m-7", echoedPayload: #"{"random":"text"}"#, text: "InvalidJson").utf8), false))
        wire.append(("connection draining", Array(ServerStanzas.connectionDraining.utf8), true))
        for (name, stanza, shortcut) in wire {
            let bytes = Array(header.utf8) + stanza
            for chunk in [bytes.count, 1] {
                var general: [Result<InboundMessage?, InboundParseError>] = []
                let plain = XMLStreamParser()
                var fast: [Result<InboundMessage?, InboundParseError>] = []
                var taken = 0
                let shaped = XMLStreamParser(payloadShape: .ccs)
                var offset = 0
                while offset < bytes.count {
                    let piece = Array(bytes[offset..<min(offset + chunk, bytes.count)])
                    offset += piece.count
                    let failure = piece.withUnsafeBytes { buffer -> XMLStreamError? in
                        do throws(XMLStreamError) {
                            try plain.feed(buffer) { event in
                                if case .stanza(let element) = event {
                                    general.append(Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: element) })
                                }
                            }
                            try shaped.feed(buffer, payload: { text in
                                taken += 1
                                fast.append(Result { () throws(InboundParseError) -> InboundMessage? in try InboundMessage.parse(payload: text) })
                                return true
                            }) { event in
                                if case .stanza(let element) = event {
                                    fast.append(Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: element) })
                                }
                            }
                        } catch {
                            return error
                        }
                        return nil
                    }
                    #expect(failure == nil, "\(name)")
                }
                #expect(general.count == 1, "\(name)")
                #expect(fast == general, "\(name) chunk \(chunk)")
                #expect(taken == (shortcut ? 1 : 0), "\(name) chunk \(chunk)")
            }
        }
    }
}

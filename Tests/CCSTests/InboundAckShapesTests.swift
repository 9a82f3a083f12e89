import Foundation
import JSONReference
import Testing
import XMLStream
@testable import CCS

/// Acks and nacks of every member combination read the same through the member-by-member path (which looks
/// up only the members it has not yet accounted for) as through Foundation alone: members present, absent,
/// of another type, in any order, with device-group members and with members ccsd does not know.
@Suite struct InboundAckShapesTests {
    /// Values a member may take in the generated shapes (nil: the member is absent).
    static let stringish: [String?] = [nil, #""t-1""#, #""""#, "5", "null", #"["a"]"#]

    static func shapes() -> [String] {
        var shapes: [String] = []
        for type in ["ack", "nack"] {
            for from in stringish {
                for second in stringish {  // registration_id for an ack, error for a nack
                    for extra in [nil, #""success":1"#, #""failure":0"#, #""failed_registration_ids":["x"]"#, #""category":"c""#,
                                  #""error_description":"d""#] {
                        var members = [#""message_type":"\#(type)""#, #""message_id":"m-1""#]
                        if let from { members.append(#""from":\#(from)"#) }
                        if let second { members.append((type == "ack" ? #""registration_id":"# : #""error":"#) + second) }
                        if let extra { members.append(extra) }
                        shapes.append("{" + members.joined(separator: ",") + "}")
                        shapes.append("{" + members.reversed().joined(separator: ",") + "}")
                    }
                }
            }
        }
        // message_id missing, empty or not a string; the type not a string.
        shapes += [#"{"message_type":"ack","from":"t"}"#, #"{"message_type":"ack","message_id":"","from":"t"}"#,
                   #"{"message_type":"nack","message_id":7,"error":"BAD_ACK"}"#, #"{"message_type":["ack"],"message_id":"m","from":"t"}"#]
        return shapes
    }

    @Test func acksAndNacksReadAsThroughFoundation() {
        let shapes = Self.shapes()
        #expect(shapes.count > 800)
        for json in shapes {
            let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                                    children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
            let inbound = Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            let old = FoundationJSON.withReference {
                Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            }
            #expect(inbound == old, "\(json)")
        }
    }

    /// The stream parser's payload shortcut: `parse(payload:)` of a `gcm` text gives what `parse(stanza:)` gives
    /// for the `<message>` around it (the same message, or the same error with the same digest), on every ack
    /// and nack shape above, on every other kind of payload, with XML whitespace around it, and on texts that
    /// are not JSON, not objects or not UTF-8; through the door and through Foundation alone.
    @Test func payloadsReadAsTheirStanzas() {
        var texts = Self.shapes()
        texts += [
            #"{"message_type":"ack","message_id":"m-2","from":"t","success":2,"failure":1,"failed_registration_ids":["x"]}"#,
            #"{"message_type":"nack","message_id":"m-3","from":"t","error":"BAD_REGISTRATION","error_description":"Invalid token t-123456789012345678901234567890"}"#,
            #"{"message_type":"receipt","message_id":"dr2:m-1","from":"gcm.googleapis.com","category":"c","data":{"message_status":"MESSAGE_SENT_TO_DEVICE","original_message_id":"m-1","device_registration_id":"t"}}"#,
            #"{"category":"c","data":{"a":"<&>\u00e9 😀"},"message_id":"u-1","from":"device-1","time_to_live":5}"#,
            #"{"message_type":"control","control_type":"CONNECTION_DRAINING"}"#,
            #"{"message_type":"surprise","message_id":"x-1"}"#,
            #"{"message_id":"u-\ud83d","from":"d","data":{}}"#,
            #"{"message_id":"u-2","from":"d","data":{"n":1e400}}"#,
            #"{"message_type":"ack","message_id":"m-1","message_id":"m-2"}"#,
            #"{"message_type":"ack","message_id":"m-1",}"#,
            "not json", "", "{", "[1]", "17", #"{"message_type":"ack"}"#, "{\"message_type\":\"ack\",\"message_id\":\"é\"}",
        ]
        var payloads: [[UInt8]] = []
        for text in texts {
            for (lead, trail) in [("", ""), (" ", ""), ("", "\n"), ("\r\n\t", " \r\n"), ("\u{301}", ""), ("", " \u{301}")] {
                payloads.append(Array((lead + text + trail).utf8))
            }
        }
        payloads += [[0xFF], Array(#"{"message_type":"ack","message_id":"m-"#.utf8) + [0xC3] + Array(#"","from":"t"}"#.utf8)]
        for foundationOnly in [false, true] {
            let body = {
                for payload in payloads {
                    let text = String(decoding: payload, as: UTF8.self)
                    let stanza = XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [.init(name: "id", value: "")],
                                            children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: text)])
                    let whole = Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
                    let fromPayload = payload.withUnsafeBytes { bytes in
                        Result { () throws(InboundParseError) -> InboundMessage? in try InboundMessage.parse(payload: bytes) }
                    }
                    #expect(fromPayload == whole, "\(text) foundationOnly \(foundationOnly)")
                }
            }
            if foundationOnly { FoundationJSON.withReference(body) } else { body() }
        }
    }

    /// Without this, the door could decline every shape and the comparison above would prove nothing.
    @Test func plainAcksAndNacksAreReadMemberByMember() {
        let read = JSONFrontDoor.withObject(#"{"from":"t","message_id":"m-1","message_type":"ack"}"#) { $0.count }
        #expect(read == 3)
        let ack = try? InboundMessage.parse(stanza: XMLElement(name: "message", children: [
            XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: #" {"registration_id":"c","from":"t","message_id":"m-1","message_type":"ack"} "#)]))
        #expect(ack == .ack(InboundMessage.Ack(messageID: "m-1", from: "t", canonicalRegistrationID: "c", group: nil)))
    }
}

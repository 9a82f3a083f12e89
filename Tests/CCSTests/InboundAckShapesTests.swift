import Foundation
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
            let old = JSONFrontDoor.$foundationOnly.withValue(true) {
                Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }
            }
            #expect(inbound == old, "\(json)")
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

import CCS
import TLS
import XMLStream

extension DownstreamPolicy {
    /// True when `decide` would answer a message to `target` with a plain ack (no device-group or canonical
    /// fields) without drawing from its generator: a target given, no nack rule matching it, no nack rate,
    /// and not one of the special targets (`group-…`, `canon-…`). The emulator then writes the ack without
    /// building it (`EmulatorConnection.writePlainAck`); the stanza is the same as `decide`'s ack.
    public func isPlainAck(target: String?) -> Bool {
        guard nackRate <= 0, let target, let lead = target.utf8.first else { return false }
        guard lead != UInt8(ascii: "g"), lead != UInt8(ascii: "c") else { return false }
        for rule in rules {
            // A prefix starting with another ASCII byte than an ASCII-led target cannot match: most targets are
            // decided by one compare. An empty prefix matches every target, and a non-ASCII first byte may
            // match through canonical equivalence (`hasPrefix`, as `decide` compares): those are compared.
            if let ruleLead = rule.prefix.utf8.first, ruleLead != lead, ruleLead < 0x80, lead < 0x80 { continue }
            if target.hasPrefix(rule.prefix) { return false }
        }
        return true
    }
}

extension ServerStanzas {
    /// Appends `<message><gcm xmlns="google:mobile:data">{"from":FROM,"message_id":ID,"message_type":"ack"}</gcm></message>`
    /// (ccs-protocol.md §3, as `DownstreamPolicy.decide` words a plain ack) to `out`, when neither value needs
    /// escaping in JSON or XML text; otherwise appends nothing and returns false.
    static func appendPlainAck(from: String, messageID: String, to out: inout [UInt8]) -> Bool {
        guard isPlain(from), isPlain(messageID) else { return false }
        out.append(contentsOf: plainAckOpen)
        out.append(contentsOf: from.utf8)
        out.append(contentsOf: plainAckMiddle)
        out.append(contentsOf: messageID.utf8)
        out.append(contentsOf: plainAckClose)
        return true
    }

    private static let plainAckOpen = Array(#"<message><gcm xmlns="google:mobile:data">{"from":""#.utf8)
    private static let plainAckMiddle = Array(#"","message_id":""#.utf8)
    private static let plainAckClose = Array(#"","message_type":"ack"}</gcm></message>"#.utf8)

    /// Printable ASCII other than `"` and `\` (JSON) and `&`, `<`, `>` (XML text).
    private static func isPlain(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in
            byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
                && byte != UInt8(ascii: "&") && byte != UInt8(ascii: "<") && byte != UInt8(ascii: ">")
        }
    }
}

extension EmulatorConnection {
    /// Writes a plain ack (`DownstreamPolicy.isPlainAck`), as `decide`'s ack would be written.
    func writePlainAck(from: String, messageID: String) {
        scratch.removeAll(keepingCapacity: true)
        guard ServerStanzas.appendPlainAck(from: from, messageID: messageID, to: &scratch) else {
            var ack = OrderedJSON()
            ack.add("from", from)
            ack.add("message_id", messageID)
            ack.add("message_type", "ack")
            return write(ServerStanzas.message(json: ack.text))
        }
        write(bytes: scratch)
    }
}

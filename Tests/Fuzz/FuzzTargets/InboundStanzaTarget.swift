import CCS
import CCSEmulator
import XMLStream

/// Inbound stanza classification (`InboundMessage.parse(stanza:)`) on a `<message>` tree around any `gcm` text.
///
/// Input: byte 0 chooses the tree, the rest (as UTF-8, invalid bytes replaced) is the `gcm` text.
/// - bits 0–1: the `type` attribute: none, `error`, `normal`, `chat`;
/// - bit 2: an `id` attribute; bit 3: the payload element in no namespace instead of `google:mobile:data`;
/// - bit 4: an RFC 6120 `<error>` child with a condition and text; bit 5: a `<body>` before the payload;
/// - bit 6: the payload with the `data:` prefix on the wire (same tree); bit 7: an `<iq>` instead of a `<message>`.
///
/// Invariants: no crash; nil exactly for what is not CCS traffic; a stanza error for `type="error"`;
/// the same classification when the stanza comes over the wire as CCS writes it; for an upstream message
/// or receipt, the ACK ccsd writes is read by the server (as the emulator reads it) as an ACK of exactly
/// the message_id it sent, to the `from` it came from; a stanza of the payload shape (no `type`, the one
/// child `gcm` in `google:mobile:data`) reads the same from its `gcm` text alone (`parse(payload:)`).
enum InboundStanzaTarget {
    static func run(_ input: [UInt8]) -> [String] {
        guard let flags = input.first else { return [] }
        let text = String(decoding: input.dropFirst(), as: UTF8.self)
        let type: String? = [nil, "error", "normal", "chat"][Int(flags & 0x03)]
        var attributes: [XMLAttribute] = []
        if flags & 0x04 != 0 { attributes.append(XMLAttribute(name: "id", value: "m-\(flags)")) }
        if let type { attributes.append(XMLAttribute(name: "type", value: type)) }
        let payloadNamespace: String? = flags & 0x08 == 0 ? XMLNamespace.gcm : nil
        var children: [XMLElement] = []
        if flags & 0x20 != 0 { children.append(XMLElement(name: "body", namespace: XMLNamespace.client, text: "b")) }
        children.append(XMLElement(name: "gcm", namespace: payloadNamespace, text: text))
        if flags & 0x10 != 0 {
            children.append(XMLElement(
                name: "error", namespace: XMLNamespace.client,
                attributes: [XMLAttribute(name: "code", value: "400"), XMLAttribute(name: "type", value: "modify")],
                children: [XMLElement(name: "bad-request", namespace: XMLNamespace.stanzas),
                           XMLElement(name: "text", namespace: XMLNamespace.stanzas, text: "InvalidJson")]))
        }
        let name = flags & 0x80 == 0 ? "message" : "iq"
        let stanza = XMLElement(name: name, namespace: XMLNamespace.client, attributes: attributes, children: children)

        var violations: [String] = []
        let direct = classify(stanza)
        switch direct {
        case .success(nil):
            if name == "message", type == "error" || payloadNamespace == XMLNamespace.gcm {
                violations.append("a CCS <message> (type \(type ?? "none")) was read as not CCS")
            }
        case .success(let message?):
            if name != "message" { violations.append("an <iq> was read as \(message)") }
            if type == "error" {
                if case .stanzaError = message {} else { violations.append("type=error read as \(message)") }
            } else if payloadNamespace != XMLNamespace.gcm {
                violations.append("a payload outside google:mobile:data was read as \(message)")
            }
            checkAck(message, &violations)
        case .failure(let error):
            if error.field.isEmpty && error.rule.isEmpty { violations.append("an InboundParseError says nothing") }
            if name != "message" || type == "error" || payloadNamespace != XMLNamespace.gcm {
                violations.append("threw \(error) for a stanza that is not a CCS payload")
            }
        }

        // The stream parser's payload shortcut: the gcm text alone, as the parser hands it over.
        if name == "message", type == nil, payloadNamespace == XMLNamespace.gcm, flags & 0x30 == 0 {
            let viaPayload = Array(text.utf8).withUnsafeBytes { bytes -> Result<InboundMessage?, InboundParseError> in
                do throws(InboundParseError) {
                    return .success(try InboundMessage.parse(payload: bytes))
                } catch {
                    var error = error
                    error.payloadDigest = 0
                    return .failure(error)
                }
            }
            if viaPayload != direct {
                violations.append("the payload reads differently without its stanza: \(viaPayload) vs \(direct)")
            }
        }

        // Over the wire, as CCS writes payloads (only text XML can carry: no other control characters).
        if name == "message", type == nil, payloadNamespace == XMLNamespace.gcm, flags & 0x30 == 0, isXMLText(text) {
            let wire = ServerStanzas.message(json: text, prefixed: flags & 0x40 != 0)
            let run = StreamRun.feed(Invariants.serverStreamHeader + Array(wire.utf8))
            if let error = run.error {
                violations.append("ServerStanzas.message does not parse: \(error.kind) \(error.message)")
            } else if let read = run.stanzas.first {
                let viaWire = classify(read)
                if viaWire != direct {
                    violations.append("the payload classifies differently over the wire: \(viaWire) vs \(direct)")
                }
            }
        }
        return violations
    }

    static func classify(_ stanza: XMLElement) -> Result<InboundMessage?, InboundParseError> {
        do throws(InboundParseError) {
            return .success(try InboundMessage.parse(stanza: stanza))
        } catch {
            var error = error
            error.payloadDigest = 0
            return .failure(error)
        }
    }

    /// The ACK ccsd writes for an upstream message or receipt, read as the emulator (the server) reads it.
    static func checkAck(_ message: InboundMessage, _ violations: inout [String]) {
        let id: UpstreamMessageID
        let from: String
        switch message {
        case .upstream(let upstream): (id, from) = (upstream.upstreamMessageID, upstream.from)
        case .receipt(let receipt): (id, from) = (receipt.upstreamMessageID, receipt.from)
        default: return
        }
        guard !id.text.isEmpty else { return }
        let ack = CCSStanza.ack(to: from, messageID: id)
        let run = StreamRun.feed(Invariants.clientStreamHeader + Array(ack.utf8))
        guard run.error == nil, run.stanzas.count == 1, let stanza = run.stanzas.first else {
            violations.append("the ACK does not parse as one stanza (\(String(describing: run.error))): \(ack)")
            return
        }
        let expected = id.literal ?? id.text
        let payload = ClientPayload.classify(stanza)
        if payload != .ack(messageID: expected) {
            violations.append("the server reads the ACK of \(expected) as \(payload): \(ack)")
        }
        let json = stanza.child("gcm", namespace: XMLNamespace.gcm).flatMap { try? JSONValue.parse($0.text) }
        if json?["to"]?.stringValue != from {
            violations.append("the ACK goes to \(String(describing: json?["to"])), not to \(from)")
        }
        if let id = stanza.attribute("id"), !InboundMessage.StanzaError(id: id, messageID: nil, condition: "bad-request").isAboutAck {
            violations.append("a stanza error about the ACK (id \(id)) would not be taken as about an ACK")
        }
        if stanza.attribute("id")?.utf8.starts(with: CCSStanza.ackIDPrefix.utf8) != true {
            violations.append("the ACK's stanza id lost its prefix: \(String(describing: stanza.attribute("id")))")
        }
    }
}

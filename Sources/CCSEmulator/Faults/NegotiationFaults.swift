import XMLStream

/// Fault modes of the emulator's login, for testing what clients tolerate (issue 7 items 2 and 6).
/// Both are off by default; `ccs-emulator --early-upstream N` and `--stream-prologue LIST` turn them on.
public struct NegotiationFaults: Sendable, Equatable {
    /// What may come before a stream header, or between streams (XML 1.0 §2.8, §4.3.3; RFC 6120 §4.3.3).
    public enum ProloguePart: String, Sendable, CaseIterable {
        /// A newline written right after `<success/>`: a byte of the old stream the client must not parse
        /// as part of the new one.
        case newlineAfterSuccess = "newline"
        /// A UTF-8 byte-order mark (EF BB BF) before each stream header the emulator writes.
        case byteOrderMark = "bom"
        /// `<?xml version='1.0' encoding='UTF-8'?>` and a newline before each stream header (after the BOM, if any).
        case xmlDeclaration = "declaration"
    }

    /// Upstream messages (`early-u-1` … `early-u-N`, from `early-device-K`) pending from the start. Right
    /// after each bind result, before the client's session request is answered, the emulator writes those
    /// no client has ACKed yet, a receipt `dr2:early-m-1` (until ACKed), an ack for a message_id nobody
    /// sent, a `<presence/>`, an `iq get` for `jabber:iq:version`, a XEP-0199 ping and an `iq result` that
    /// answers nothing: what a server with traffic to redeliver may send once the resource is bound
    /// (RFC 6120 §7). 0 = off.
    public var earlyUpstream: Int
    /// What the emulator writes around stream headers. Empty = off.
    public var streamPrologue: Set<ProloguePart>
    /// A wrong server key gets a SASL `<failure>` whose `<text>` echoes what the client sent: the key it
    /// gave and its whole PLAIN response (a careless server; tests that secrets never reach logs). Off by default.
    public var saslFailureEchoesCredentials = false

    public init(earlyUpstream: Int = 0, streamPrologue: Set<ProloguePart> = []) {
        self.earlyUpstream = earlyUpstream
        self.streamPrologue = streamPrologue
    }

    /// Parses a comma-separated list of `ProloguePart` names (`newline,bom,declaration`); nil when a name is unknown.
    public static func parsePrologue(_ text: String) -> Set<ProloguePart>? {
        var parts: Set<ProloguePart> = []
        for name in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let part = ProloguePart(rawValue: String(name).trimmingXMLWhitespace()) else { return nil }
            parts.insert(part)
        }
        return parts
    }

    /// What goes before each stream header the emulator writes.
    var headerPrefix: String {
        (streamPrologue.contains(.byteOrderMark) ? "\u{FEFF}" : "")
            + (streamPrologue.contains(.xmlDeclaration) ? "<?xml version='1.0' encoding='UTF-8'?>\n" : "")
    }

    /// What goes right after `<success/>`.
    var afterSuccess: String { streamPrologue.contains(.newlineAfterSuccess) ? "\n" : "" }

    /// The message_ids of the early upstream messages.
    var earlyUpstreamIDs: [String] { (0..<max(0, earlyUpstream)).map { "early-u-\($0 + 1)" } }

    /// The downstream message_id whose receipt the early traffic carries.
    static let earlyReceiptOriginalID = "early-m-1"
}

extension CCSEmulator {
    /// The early traffic of `NegotiationFaults.earlyUpstream`, written right after the bind result
    /// (called from `bound`). Items a client already ACKed, on any connection, are not sent again.
    func writeEarlyTraffic(on connection: EmulatorConnection, acked: [ClientAck]) {
        let faults = configuration.negotiationFaults
        guard faults.earlyUpstream > 0 else { return }
        let ackedIDs = Set(acked.map(\.messageID))
        let domain = configuration.jidDomain
        for (index, messageID) in faults.earlyUpstreamIDs.enumerated() where !ackedIDs.contains(messageID) {
            var data = OrderedJSON()
            data.add("text", Self.upstreamText)
            data.add("n", String(index + 1))
            var json = OrderedJSON()
            json.add("category", "com.example.app")
            json.add("data", raw: data.text)
            json.add("message_id", messageID)
            json.add("from", "early-device-\(index + 1)")
            deliverUpstream(messageID: messageID, json: json.text, on: connection)
        }
        if !ackedIDs.contains("dr2:\(NegotiationFaults.earlyReceiptOriginalID)") {
            sendReceipt(originalMessageID: NegotiationFaults.earlyReceiptOriginalID, target: "early-device-1", on: connection)
        }
        var stray = OrderedJSON()
        stray.add("from", "early-device-1")
        stray.add("message_id", "early-never-sent")
        stray.add("message_type", "ack")
        connection.write(ServerStanzas.message(json: stray.text))
        var out = "<presence from=\""
        XMLWriter.appendEscapedAttribute(domain, to: &out)
        out += "\"/><iq type=\"get\" id=\"emu-early-version\" from=\""
        XMLWriter.appendEscapedAttribute(domain, to: &out)
        out += "\"><query xmlns=\"jabber:iq:version\"/></iq>"
        out += ServerStanzas.ping(id: "emu-ping-early-\(connection.id)", from: domain)
        out += ServerStanzas.iqResult(id: "emu-stray-result")
        connection.write(out)
        log("early traffic written after the bind result, before the session result", connection: connection.id)
    }
}

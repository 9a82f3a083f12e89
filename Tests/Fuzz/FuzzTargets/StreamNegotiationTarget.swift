import XMLStream
import XMPP

/// The client's stream negotiation (`StreamNegotiation`) driven by whatever a server sends.
///
/// Input: byte 0 chooses the credentials (bit 0: request a resource) and what happens once the server's
/// bytes are read (bit 1: a keepalive ping is made; bit 2: the transport fails); the rest is the server's
/// side of the connection. It is read by `XMLStreamParser` and each event goes to the state machine as
/// `XMPPClient` hands it over: a `restartStream` action resets the parser inside the handler, an XML error
/// fails the negotiation from outside.
///
/// Invariants: no crash or precondition failure; after `fail` nothing more happens; at most one `fail`,
/// one `ready` (with a JID) and one restart (only after the `<auth>`); nothing is delivered before the
/// bind request is out; every `iq get`/`set` before a failure gets one reply with its id; every element
/// ccsd sends survives `XMLWriter` → parser; no error or notice carries the server key, the PLAIN
/// response, or a run of 8 of their bytes.
enum StreamNegotiationTarget {
    /// A sentinel server key: an XML name, so a server can echo it anywhere (text, names, attributes).
    static let serverKey = "FuzzServerKeyQuokkaPangolinWombat"

    struct Tally {
        var violations: [String] = []
        var failed = false
        var ready = 0
        var restarts = 0
        var authSent = false
        var bindSent = false
        var footers = 0
    }

    static func run(_ input: [UInt8]) -> [String] {
        guard let flags = input.first else { return [] }
        let credentials = XMPPCredentials(
            username: "123456789012", password: Secret(serverKey), resource: flags & 0x01 != 0 ? "fuzz" : nil)
        let secrets = [serverKey, credentials.plainInitialResponse]
        var negotiation = StreamNegotiation(credentials: credentials)
        var tally = Tally()
        let parser = XMLStreamParser()

        func perform(_ actions: [StreamNegotiation.Action], after event: String) {
            if tally.failed, !actions.isEmpty {
                tally.violations.append("actions after fail, on \(event): \(actions)")
            }
            for action in actions {
                switch action {
                case .sendStreamHeader:
                    if event != "start" { tally.violations.append("an initial stream header on \(event)") }
                case .sendStreamFooter:
                    // One footer for the one stream of ours that is open (the restarted one after SASL
                    // success), and only on the way to a failure or a close.
                    tally.footers += 1
                    if tally.footers > 1 { tally.violations.append("footer #\(tally.footers) on \(event)") }
                    if !actions.contains(where: { if case .fail = $0 { true } else { false } }) {
                        tally.violations.append("a footer without a fail on \(event)")
                    }
                case .restartStream:
                    tally.restarts += 1
                    if !tally.authSent || tally.restarts > 1 {
                        tally.violations.append("restart #\(tally.restarts) (auth sent: \(tally.authSent)) on \(event)")
                    }
                    parser.reset()
                case .send(let element):
                    if element.is("auth", XMLNamespace.sasl) { tally.authSent = true }
                    if element.is("iq", XMLNamespace.client), element.child("bind", namespace: XMLNamespace.bind) != nil {
                        tally.bindSent = true
                    }
                    Invariants.checkWriterRoundTrip(element, &tally.violations, "sent <\(element.name)>")
                case .ready(let jid):
                    tally.ready += 1
                    if jid.isEmpty || tally.ready > 1 || !tally.bindSent || !negotiation.isReady {
                        tally.violations.append("ready #\(tally.ready) as '\(jid)' (bind sent: \(tally.bindSent)) on \(event)")
                    }
                case .deliver(let stanza):
                    if !tally.bindSent { tally.violations.append("delivered <\(stanza.name)> before the bind request") }
                case .notice(let error):
                    checkSecrets(error, secrets, &tally.violations)
                case .fail(let error):
                    checkSecrets(error, secrets, &tally.violations)
                    if tally.failed { tally.violations.append("a second fail: \(error)") }
                    tally.failed = true
                    if negotiation.state != .failed { tally.violations.append("fail left state \(negotiation.state)") }
                }
            }
        }

        perform(negotiation.start(), after: "start")
        var xmlError: XMLStreamError?
        do {
            try parser.feed(Array(input.dropFirst())) { event in
                switch event {
                case .streamStart(let header):
                    perform(negotiation.streamStarted(header), after: "stream header")
                case .stanza(let stanza):
                    let wasFailed = tally.failed
                    let actions = negotiation.stanzaReceived(stanza)
                    perform(actions, after: "<\(stanza.name)>")
                    checkAnswered(stanza, actions, wasFailed: wasFailed, &tally.violations)
                case .streamEnd:
                    perform(negotiation.streamEnded(), after: "stream end")
                }
            }
        } catch {
            xmlError = error
            perform(negotiation.failExternally(XMPPError(.invalidXML, condition: error.streamErrorCondition, message: error.message)),
                    after: "XML error")
        }
        if flags & 0x02 != 0 {
            let ping = negotiation.makePing()
            Invariants.checkWriterRoundTrip(ping, &tally.violations, "ping")
        }
        if flags & 0x04 != 0 {
            perform(negotiation.failExternally(XMPPError(.transport, message: "connection reset")), after: "transport failure")
        }
        if xmlError != nil, !tally.failed { tally.violations.append("an XML error did not fail the negotiation") }
        return tally.violations
    }

    /// An `iq get`/`set` must get exactly one reply with its id (RFC 6120 §8.2.3), unless the stream had failed.
    static func checkAnswered(_ stanza: XMLElement, _ actions: [StreamNegotiation.Action], wasFailed: Bool, _ violations: inout [String]) {
        guard !wasFailed, stanza.name == "iq", stanza.namespace == XMLNamespace.client || stanza.namespace == nil,
              let type = stanza.attribute("type"), type == "get" || type == "set" else { return }
        let replies = actions.filter { action in
            guard case .send(let reply) = action, reply.name == "iq" else { return false }
            return reply.attribute("id") == (stanza.attribute("id") ?? "")
                && (reply.attribute("type") == "result" || reply.attribute("type") == "error")
        }
        if replies.count != 1 { violations.append("iq \(type) got \(replies.count) replies: \(actions)") }
    }

    /// No error text may carry a secret, whole or as a run of `XMPPCredentials.redactionWindow` bytes (any ASCII case).
    static func checkSecrets(_ error: XMPPError, _ secrets: [String], _ violations: inout [String]) {
        let text = Array(error.description.lowercased().utf8)
        let window = XMPPCredentials.redactionWindow
        guard text.count >= window else { return }
        for secret in secrets {
            let bytes = Array(secret.lowercased().utf8)
            for start in 0...(bytes.count - window) {
                let run = bytes[start..<(start + window)]
                if text.indices.dropLast(window - 1).contains(where: { text[$0..<($0 + window)].elementsEqual(run) }) {
                    violations.append("an error carries a secret: \(error)")
                    return
                }
            }
        }
    }
}

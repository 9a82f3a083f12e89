import Testing
import XMLStream
@testable import XMPP

/// Every error and notice the negotiation reports is free of the server key, wherever a server echoes it:
/// not only in SASL failure and stream error text, but in mechanism names, element names, namespaces,
/// attribute values, stanza error conditions, and the XML errors the driver hands in.
@Suite struct NegotiationSecretEchoTests {
    static let key = "SentinelKeyEchoedByTheServer"
    let credentials = XMPPCredentials(username: "123456789", password: Secret(Self.key))

    static let header = XMLElement(name: "stream", namespace: XMLNamespace.stream)
    static func features(mechanisms: [String]) -> XMLElement {
        XMLElement(name: "features", namespace: XMLNamespace.stream, children: [
            XMLElement(name: "mechanisms", namespace: XMLNamespace.sasl,
                       children: mechanisms.map { XMLElement(name: "mechanism", namespace: XMLNamespace.sasl, text: $0) })])
    }

    /// A negotiation that has sent its `<auth>`.
    func authenticating() -> StreamNegotiation {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(Self.header)
        _ = machine.stanzaReceived(Self.features(mechanisms: ["PLAIN"]))
        return machine
    }

    /// A negotiation that has sent its bind request (`bind-1`), with a session offered.
    func binding() -> StreamNegotiation {
        var machine = authenticating()
        _ = machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl))
        _ = machine.streamStarted(Self.header)
        _ = machine.stanzaReceived(XMLElement(name: "features", namespace: XMLNamespace.stream, children: [
            XMLElement(name: "bind", namespace: XMLNamespace.bind), XMLElement(name: "session", namespace: XMLNamespace.session)]))
        return machine
    }

    func expectNoKey(_ actions: [StreamNegotiation.Action], _ what: Comment) {
        var reported = 0
        for action in actions {
            switch action {
            case .fail(let error), .notice(let error):
                reported += 1
                let shown = "\(error) \(error.message) \(error.condition ?? "")"
                #expect(!shown.contains(Self.key) && !shown.contains("KeyEchoed"), what)
                #expect(shown.contains("<redacted>"), what)
            default:
                break
            }
        }
        #expect(reported > 0, what)
    }

    @Test func echoesInNamesAttributesAndMechanismsAreRedacted() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(Self.header)
        expectNoKey(machine.stanzaReceived(Self.features(mechanisms: [Self.key, "SCRAM-SHA-1"])), "a mechanism name")

        machine = authenticating()
        expectNoKey(machine.stanzaReceived(XMLElement(name: Self.key, namespace: XMLNamespace.sasl)),
                    "an element name in the SASL namespace")
        machine = authenticating()
        expectNoKey(machine.stanzaReceived(XMLElement(name: "failure", namespace: XMLNamespace.sasl, children: [
            XMLElement(name: Self.key, namespace: XMLNamespace.sasl)])), "a SASL failure condition")
        machine = authenticating()
        expectNoKey(machine.stanzaReceived(XMLElement(name: "x", namespace: "urn:" + Self.key)), "a namespace")
        machine = authenticating()
        expectNoKey(machine.stanzaReceived(XMLElement(name: "error", namespace: XMLNamespace.stream, children: [
            XMLElement(name: Self.key, namespace: XMLNamespace.streams)])), "a stream error condition")

        machine = binding()
        expectNoKey(machine.stanzaReceived(XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: [
            XMLAttribute(name: "type", value: Self.key), XMLAttribute(name: "id", value: "bind-1")])), "a bind reply's type")
        machine = binding()
        _ = machine.stanzaReceived(XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: [
            XMLAttribute(name: "type", value: "result"), XMLAttribute(name: "id", value: "bind-1")], children: [
            XMLElement(name: "bind", namespace: XMLNamespace.bind, children: [XMLElement(name: "jid", namespace: XMLNamespace.bind, text: "a@b/c")])]))
        expectNoKey(machine.stanzaReceived(XMLElement(name: "iq", namespace: XMLNamespace.client, attributes: [
            XMLAttribute(name: "type", value: "error"), XMLAttribute(name: "id", value: "session-2")], children: [
            XMLElement(name: "error", namespace: XMLNamespace.client, children: [XMLElement(name: Self.key, namespace: XMLNamespace.stanzas)])])),
                    "a session error condition")

        machine = authenticating()
        expectNoKey(machine.failExternally(XMPPError(.invalidXML, message: "libxml2: Opening and ending tag mismatch: \(Self.key.lowercased())")),
                    "an XML error quoting a name")
    }
}

import Foundation
import Testing
import XMLStream
@testable import XMPP

/// Break-it reproductions at the negotiation layer. Each reproduced a bug of the break-it pass before its fix.
@Suite struct HostileNegotiationTests {
    static let key = "s3cr3t-server-key"
    let credentials = XMPPCredentials(username: "123456789", password: Secret(HostileNegotiationTests.key), jidDomain: "gcm.googleapis.com")

    /// Drives a machine to `.authenticating`.
    func authenticating() -> StreamNegotiation {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(XMLElement(name: "stream", namespace: XMLNamespace.stream))
        _ = machine.stanzaReceived(XMLElement(name: "features", namespace: XMLNamespace.stream, children: [
            XMLElement(name: "mechanisms", namespace: XMLNamespace.sasl, children: [
                XMLElement(name: "mechanism", namespace: XMLNamespace.sasl, text: "PLAIN")])]))
        return machine
    }

    func failure(_ condition: String, text: String? = nil) -> XMLElement {
        var children = [XMLElement(name: condition, namespace: XMLNamespace.sasl)]
        if let text { children.append(XMLElement(name: "text", namespace: XMLNamespace.sasl, text: text)) }
        return XMLElement(name: "failure", namespace: XMLNamespace.sasl, children: children)
    }

    /// RFC 6120 §6.5.13: `temporary-auth-failure` means "try again later", not "bad
    /// credentials". ccsd classifies every SASL failure as a configuration error
    /// (Sources/XMPP/XMPPError.swift:46, Sources/XMPP/StreamNegotiation.swift:161), so one such failure on
    /// one connection of a pool (the others logged in with the same key) stops the daemon with exit 3 and
    /// nacks every outstanding message as final AUTHENTICATION_FAILED.
    /// Repro against a fake server: two connections, the 2nd gets <temporary-auth-failure/> → rc=3, 50/50 nacked.
    @Test func temporaryAuthFailureIsNotAConfigurationError() throws {
        var machine = authenticating()
        let actions = machine.stanzaReceived(failure("temporary-auth-failure"))
        guard case .fail(let error)? = actions.last else {
            Issue.record("expected .fail, got \(actions)")
            return
        }
        #expect(!error.isConfigurationError, "a temporary failure stopped ccsd for good: \(error)")
    }

    /// The server's SASL `<text>` is copied into the error verbatim, so a server (or a
    /// proxy) that echoes the credentials it received puts the server key into the log line "authentication
    /// failed; stopping" and into the `connection` event's `reason` (Sources/XMPP/StreamNegotiation.swift:157-161).
    @Test func saslFailureTextNeverCarriesTheServerKey() throws {
        var machine = authenticating()
        let echoed = "\u{0}123456789@gcm.googleapis.com\u{0}\(Self.key)".replacingOccurrences(of: "\u{0}", with: "|")
        let actions = machine.stanzaReceived(failure("not-authorized", text: "bad credentials: \(echoed)"))
        guard case .fail(let error)? = actions.last else {
            Issue.record("expected .fail, got \(actions)")
            return
        }
        #expect(!error.description.contains(Self.key), "the server key leaked into: \(error.description)")
    }
}

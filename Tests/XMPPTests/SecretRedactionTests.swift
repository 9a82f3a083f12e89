import Testing
import XMLStream
@testable import XMPP

/// Text a peer sends (SASL failure text, stream error text) reaches logs and events only without the server
/// key, the PLAIN response that carries it, or a recognizable part of either.
@Suite struct SecretRedactionTests {
    static let key = "AAAA-SentinelServerKey-zq9XWkvBq_Tf"
    let credentials = XMPPCredentials(username: "123456789", password: Secret(Self.key), jidDomain: "gcm.googleapis.com")

    @Test func wholeTruncatedAndCaseChangedEchoesAreRedacted() {
        let plain = credentials.plainInitialResponse
        for echo in [Self.key, String(Self.key.prefix(16)), String(Self.key.dropFirst(5).prefix(9)),
                     Self.key.lowercased(), Self.key.uppercased(), plain, String(plain.suffix(12)), plain.lowercased()] {
            let text = credentials.redactingSecrets("the server said: key=\(echo) (bye)")
            // Failure messages never print the text: it would hold the (sentinel) key.
            #expect(!text.contains(echo), "an echo of \(echo.count) characters was kept")
            #expect(text == "the server said: key=<redacted> (bye)", "the redacted text is not as expected")
        }
    }

    @Test func textWithoutTheSecretIsUnchanged() {
        for text in ["", "policy violation", "too many connections for 123456789@gcm.googleapis.com", "€ ünïcode ✓"] {
            #expect(credentials.redactingSecrets(text) == text)
        }
    }

    /// A `<stream:error>` whose text echoes the key, before or after login, fails without it.
    @Test func streamErrorTextNeverCarriesTheKey() {
        var machine = StreamNegotiation(credentials: credentials)
        _ = machine.start()
        _ = machine.streamStarted(XMLElement(name: "stream", namespace: XMLNamespace.stream))
        let streamError = XMLElement(name: "error", namespace: XMLNamespace.stream, children: [
            XMLElement(name: "not-authorized", namespace: XMLNamespace.streams),
            XMLElement(name: "text", namespace: XMLNamespace.streams,
                       text: "key=\(Self.key) plain=\(credentials.plainInitialResponse)")])
        guard case .fail(let error)? = machine.stanzaReceived(streamError).last else {
            Issue.record("expected fail")
            return
        }
        #expect(error.condition == "not-authorized")
        let shown = "\(error.message) \(error)"
        #expect(!shown.contains(Self.key) && !shown.contains(credentials.plainInitialResponse))
        #expect(!shown.contains("SentinelServerKey"))
        #expect(error.message == "key=<redacted> plain=<redacted>")
    }
}

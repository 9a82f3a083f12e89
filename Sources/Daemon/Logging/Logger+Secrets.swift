import CCS
import XMPP

extension Logger {
    /// What a secret is replaced with in a log line.
    public static let redactedMarker = "<redacted>"

    /// Adds to the secrets this logger never writes: the server key in `credentials` and the SASL PLAIN
    /// response that carries it (`XMPPCredentials.plainInitialResponse`). Every later line, on any thread, in
    /// every `Format`, has each occurrence in its message and metadata values replaced by `<redacted>`: the
    /// last line of defence behind the call sites, which log no key, for a key that arrives where nobody
    /// expected it (pasted into another setting, echoed by a peer). A key replaced by a reload stays secret
    /// (connections opened before the reload still use it). Empty secrets are ignored.
    public func addSecrets(_ credentials: XMPPCredentials) {
        let values = [credentials.password.revealed, credentials.plainInitialResponse].filter { $0.count >= 8 }
        secrets.withLock { secrets in
            for value in values where !secrets.contains(value) { secrets.append(value) }
            // The longest first, so that a key inside its PLAIN response's text is not cut first.
            secrets.sort { $0.utf8.count > $1.utf8.count }
        }
    }

    /// `text` with every occurrence of each of `secrets` replaced by `<redacted>`.
    static func redact(_ text: String, _ secrets: [String]) -> String {
        var text = text
        for secret in secrets where text.contains(secret) {
            text = text.replacing(secret, with: redactedMarker)
        }
        return text
    }
}

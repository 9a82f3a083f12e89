import FoundationEssentials

/// Who we log in as (ccs-protocol.md §1).
///
/// The SASL PLAIN authcid is `username@jidDomain` (for CCS: `SENDER_ID@gcm.googleapis.com`), with an
/// empty authzid. The JID domain is not the connect host. `description` hides the password.
public struct XMPPCredentials: Sendable, Equatable, CustomStringConvertible {
    /// The local part of the JID; for CCS the sender ID.
    public var username: String
    /// The secret; for CCS the server key. Never logged; unwrapped only for the PLAIN response.
    public var password: Secret
    /// The JID domain used in the stream header `to` and in the SASL user name (default `gcm.googleapis.com`).
    public var jidDomain: String
    /// The resource to request at bind (RFC 6120 §7.7), or `nil` to let the server assign one.
    public var resource: String?
    /// The SASL PLAIN authentication identity (RFC 4616 §2). CCS wants the bare JID
    /// `SENDER_ID@gcm.googleapis.com` (ccs-protocol.md §1), the default; a general XMPP server such as
    /// Prosody wants the local part alone (RFC 6120 §6.3.8, "simple user name").
    public var authenticationIdentity: String

    public init(username: String, password: Secret, jidDomain: String = "gcm.googleapis.com", resource: String? = nil,
                authenticationIdentity: String? = nil) {
        self.username = username
        self.password = password
        self.jidDomain = jidDomain
        self.resource = resource
        self.authenticationIdentity = authenticationIdentity ?? "\(username)@\(jidDomain)"
    }

    /// The bare JID `username@jidDomain`.
    public var bareJID: String { "\(username)@\(jidDomain)" }

    /// The SASL PLAIN initial response (RFC 4616 §2): `"\0" + authcid + "\0" + password`, base64-encoded,
    /// with an empty authzid.
    public var plainInitialResponse: String {
        var bytes: [UInt8] = [0]
        bytes += Array(authenticationIdentity.utf8)
        bytes.append(0)
        bytes += Array(password.revealed.utf8)
        return Data(bytes).base64EncodedString()
    }

    public var description: String {
        "XMPPCredentials(\(bareJID), password: <redacted>)"
    }

    /// `text` with every echo of the password, and of the PLAIN response that carries it, replaced by
    /// `<redacted>`: for text that came from a peer (SASL failure text, stream error text) and goes to logs or
    /// events.
    ///
    /// Partial and case-changed echoes count too: any run of `redactionWindow` (8) or more bytes that stands,
    /// ignoring ASCII case, anywhere in a secret is redacted, so a server that echoes a truncated or
    /// lowercased key does not leak most of it. (A secret shorter than the window is redacted only whole.)
    public func redactingSecrets(_ text: String) -> String {
        let secrets = [password.revealed, plainInitialResponse].filter { !$0.isEmpty }
        guard !secrets.isEmpty, !text.isEmpty else { return text }
        var result = text
        for secret in secrets where secret.utf8.count < Self.redactionWindow {
            result = result.replacing(secret, with: "<redacted>")
        }
        let window = Self.redactionWindow
        var windows = Set<[UInt8]>()
        for secret in secrets where secret.utf8.count >= window {
            let bytes = Array(secret.utf8).map(Self.lowercased)
            for start in 0...(bytes.count - window) { windows.insert(Array(bytes[start..<(start + window)])) }
        }
        guard !windows.isEmpty else { return result }
        let bytes = Array(result.utf8)
        guard bytes.count >= window else { return result }
        let folded = bytes.map(Self.lowercased)
        var redact = [Bool](repeating: false, count: bytes.count)
        var found = false
        for start in 0...(bytes.count - window) where windows.contains(Array(folded[start..<(start + window)])) {
            for index in start..<(start + window) { redact[index] = true }
            found = true
        }
        guard found else { return result }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if redact[index] {
                out += Array("<redacted>".utf8)
                while index < bytes.count, redact[index] { index += 1 }
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Shortest run of a secret's bytes that `redactingSecrets` treats as an echo of it.
    public static let redactionWindow = 8

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }
}

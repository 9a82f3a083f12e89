import Foundation

/// Who we log in as (ccs-protocol.md §1).
///
/// The SASL PLAIN authcid is `username@jidDomain` (for CCS: `SENDER_ID@gcm.googleapis.com`), with an
/// empty authzid. The JID domain is not the connect host. `description` hides the password.
public struct XMPPCredentials: Sendable, Equatable, CustomStringConvertible {
    /// The local part of the JID; for CCS the sender ID.
    public var username: String
    /// The secret; for CCS the server key. Never logged.
    public var password: String
    /// The JID domain used in the stream header `to` and in the SASL user name (default `gcm.googleapis.com`).
    public var jidDomain: String
    /// The resource to request at bind (RFC 6120 §7.7), or `nil` to let the server assign one.
    public var resource: String?
    /// The SASL PLAIN authentication identity (RFC 4616 §2). CCS wants the bare JID
    /// `SENDER_ID@gcm.googleapis.com` (ccs-protocol.md §1), the default; a general XMPP server such as
    /// Prosody wants the local part alone (RFC 6120 §6.3.8, "simple user name").
    public var authenticationIdentity: String

    public init(username: String, password: String, jidDomain: String = "gcm.googleapis.com", resource: String? = nil,
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
        bytes += Array(password.utf8)
        return Data(bytes).base64EncodedString()
    }

    public var description: String {
        "XMPPCredentials(\(bareJID), password: <redacted>)"
    }

    /// `text` with every occurrence of the password, and of the PLAIN response that carries it, replaced
    /// by `<redacted>`: for text that came from a peer and goes to logs or events.
    public func redactingSecrets(_ text: String) -> String {
        var result = text
        for secret in [password, plainInitialResponse] where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return result
    }
}

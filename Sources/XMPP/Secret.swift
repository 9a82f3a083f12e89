/// A secret string (the server key) that never prints: `description`, `debugDescription` and
/// string interpolation all give `<redacted>`. Read `revealed` only where the secret goes on the wire: the
/// SASL PLAIN response (`XMPPCredentials.plainInitialResponse`), and scrubbing peer text of echoes of it.
/// It lives in the XMPP layer so that the key travels wrapped from the configuration to that one place.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public let revealed: String
    public init(_ value: String) { revealed = value }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}

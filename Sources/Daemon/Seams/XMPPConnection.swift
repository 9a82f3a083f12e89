import CCS
import XMLStream
import XMPP

/// One XMPP client connection as the daemon's driver sees it: the seam between the driver and
/// `XMPPClient` (TLS on a socket), so the driver can be tested with a mock connection and no socket.
///
/// Confined to the daemon's loop: call it only from work running there.
///
/// **Re-entrancy rule** (the one rule of every delegate layer, as `TLSConnection` already follows it):
/// a connection never calls its delegate inside a call the delegate made. Whatever a call causes (an end
/// after `send` fails, `close`, `abort`) is reported on a later loop turn, so a driver may call
/// `send`/`close`/`abort` while iterating its own state without being re-entered.
public protocol XMPPConnection: AnyObject {
    /// The owner's id for this connection (the dispatcher's connection id).
    var connectionID: Int { get }
    /// Connects and logs in; the delegate hears `connectionDidBecomeReady` or `connection(_:didEndWith:)`.
    func start()
    /// Queues one stanza's XML text (a downstream message or an ACK, ccs-protocol.md §2–§3).
    /// - Returns: false when the stream is not open for stanzas (not logged in, closing, ended).
    @discardableResult func send(raw text: String) -> Bool
    /// Queues one stanza's XML as UTF-8 bytes (`MessageRecord.stanza`); as `send(raw:)` otherwise (see the
    /// extension's default).
    @discardableResult func send(utf8 bytes: [UInt8]) -> Bool
    /// Queues one stanza's XML as UTF-8 bytes read in place (`MessageRecord.withStanza`): valid only during
    /// the call, copied if kept. As `send(utf8:)` otherwise (see the extension's default).
    @discardableResult func send(utf8Bytes bytes: UnsafeRawBufferPointer) -> Bool
    /// Closes the stream politely (`</stream:stream>`, RFC 6120 §4.4), then TLS; ends with `.closedLocally`.
    func close()
    /// Drops the connection at once (no closing handshake); ends with `.closedLocally`.
    func abort()
    /// Stops (true) or resumes (false) reading from the server (see the extension's default).
    func setReadingPaused(_ paused: Bool)
}

/// Receives an `XMPPConnection`'s events, on the daemon's loop, never inside a call the delegate made
/// (see `XMPPConnection`).
public protocol XMPPConnectionDelegate: AnyObject {
    /// Login finished; `jid` is the bound full JID.
    func connectionDidBecomeReady(_ connection: any XMPPConnection, jid: String)
    /// A stanza arrived (traffic from the bind request on; may come before ready, see `XMPPClientDelegate`).
    func connection(_ connection: any XMPPConnection, didReceive stanza: XMLElement)
    /// A CCS payload stanza offered as its `gcm` text alone (see `XMPPClientDelegate`); returns whether it
    /// was taken, else the stanza comes to `connection(_:didReceive:)`. Default: false.
    func connection(_ connection: any XMPPConnection, didReceivePayload text: UnsafeRawBufferPointer) -> Bool
    /// Something that did not end the stream but is worth a log line. Default: nothing.
    func connection(_ connection: any XMPPConnection, noticed error: XMPPError)
    /// The connection ended; exactly once. `error.kind == .closedLocally` after `close()` or `abort()`.
    func connection(_ connection: any XMPPConnection, didEndWith error: XMPPError)
}

extension XMPPConnection {
    /// Stops (true) or resumes (false) reading from the server: inbound backpressure, the peer's writes then
    /// wait in TCP. Default: nothing (a connection that cannot pause keeps reading).
    public func setReadingPaused(_ paused: Bool) {}

    /// Default: the bytes as text, through `send(raw:)`.
    @discardableResult
    public func send(utf8 bytes: [UInt8]) -> Bool { send(raw: String(decoding: bytes, as: UTF8.self)) }

    /// Default: the bytes copied into an array, through `send(utf8:)`.
    @discardableResult
    public func send(utf8Bytes bytes: UnsafeRawBufferPointer) -> Bool { send(utf8: [UInt8](bytes)) }
}

extension XMPPConnectionDelegate {
    public func connection(_ connection: any XMPPConnection, noticed error: XMPPError) {}
    public func connection(_ connection: any XMPPConnection, didReceivePayload text: UnsafeRawBufferPointer) -> Bool { false }
}

/// Makes connections for the driver: `XMPPClientFactory` in the daemon, a mock factory in tests.
public protocol XMPPConnectionFactory: AnyObject {
    /// A new, not yet started connection to `endpoint` whose events go to `delegate` (held weakly).
    func makeConnection(id: Int, endpoint: Endpoint, delegate: any XMPPConnectionDelegate) -> any XMPPConnection
}

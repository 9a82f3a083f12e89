import CCS
import TLS
import XMLStream
import XMPP

extension XMPPClient: XMPPConnection {
    /// The owner's connection id (`tag`).
    public var connectionID: Int { tag }
}

/// Makes `XMPPClient`s behind the `XMPPConnection` seam, each with a `XMPPClientBridge` that forwards its
/// `XMPPClientDelegate` calls to an `XMPPConnectionDelegate` under the re-entrancy rule. Confined to `loop`.
public final class XMPPClientFactory: XMPPConnectionFactory {
    public let loop: EventLoop
    private let makeConfiguration: (Endpoint) -> XMPPClientConfiguration
    /// The bridges of connections that have not ended (an `XMPPClient` holds its delegate weakly).
    private var bridges: [Int: XMPPClientBridge] = [:]

    /// - Parameter configuration: the client settings for an endpoint (host, port, credentials, TLS, limits).
    public init(loop: EventLoop, configuration: @escaping (Endpoint) -> XMPPClientConfiguration) {
        self.loop = loop
        self.makeConfiguration = configuration
    }

    public func makeConnection(id: Int, endpoint: Endpoint, delegate: any XMPPConnectionDelegate) -> any XMPPConnection {
        let bridge = XMPPClientBridge(delegate: delegate) { [weak self] in self?.bridges[id] = nil }
        let client = XMPPClient(configuration: makeConfiguration(endpoint), tag: id, on: loop, delegate: bridge)
        bridges[id] = bridge
        return client
    }
}

/// Forwards an `XMPPClient`'s delegate calls to an `XMPPConnectionDelegate`. `XMPPClient` reports its end
/// synchronously, possibly inside a `send`, `close` or `abort` the delegate is still performing; the bridge
/// defers that report to the next loop turn, so the `XMPPConnection` re-entrancy rule holds. Ready and
/// stanza callbacks come from socket reads, never inside a delegate's call, and pass straight through.
public final class XMPPClientBridge: XMPPClientDelegate {
    private weak var delegate: (any XMPPConnectionDelegate)?
    private let onEnd: () -> Void

    init(delegate: any XMPPConnectionDelegate, onEnd: @escaping () -> Void) {
        self.delegate = delegate
        self.onEnd = onEnd
    }

    public func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) {
        delegate?.connectionDidBecomeReady(client, jid: jid)
    }

    public func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) {
        delegate?.connection(client, didReceive: stanza)
    }

    public func xmppClient(_ client: XMPPClient, didReceivePayload text: UnsafeRawBufferPointer) -> Bool {
        delegate?.connection(client, didReceivePayload: text) ?? false
    }

    public func xmppClient(_ client: XMPPClient, noticed error: XMPPError) {
        delegate?.connection(client, noticed: error)
    }

    public func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) {
        let bound = LoopBound((self, client, error), eventLoop: client.loop)
        client.loop.execute {
            let (bridge, client, error) = bound.value
            bridge.delegate?.connection(client, didEndWith: error)
            bridge.onEnd()
        }
    }
}

import Dispatch
import Glibc

/// A listening TLS server for the CCS emulator and tests; confined to its `EventLoop`.
///
/// Binds `host:port` (port 0 = an ephemeral port, see `port`), accepts up to 64 connections per readiness
/// event, and hands each new `TLSConnection` to `onAccept` (on the loop) *before* the handshake, so the caller
/// can set its delegate; the handshake then starts, bounded by `handshakeTimeout`.
public final class TLSServer {
    /// The bound TCP port (the ephemeral one if 0 was asked for).
    public let port: Int
    /// The loop this server and its connections are confined to.
    public let eventLoop: EventLoop
    private let context: TLSContext
    private let configuration: TLSServerConfiguration
    private let listener: SocketHandle
    private let onAccept: (TLSConnection) -> Void

    /// Starts listening. Call on `loop`. `host` must be a numeric address ("127.0.0.1", "::1", "0.0.0.0").
    /// - Throws: `.configuration` for bad PEM or a key that does not match, or when the address cannot be bound
    ///   (reason: errno text, e.g. "Address already in use"); `.resolutionFailed` for a non-numeric host.
    public init(host: String = "127.0.0.1", port: Int = 0, configuration: TLSServerConfiguration, on loop: EventLoop,
                onAccept: @escaping (TLSConnection) -> Void) throws(TLSError) {
        loop.preconditionInEventLoop()
        let context = try TLSContext.server(configuration: configuration)
        guard let address = try SocketAddress.resolve(host: host, port: port, passive: true, numericOnly: true).first else {
            throw TLSError(.resolutionFailed, host: host, reason: "no address")
        }
        let fd = SocketOptions.makeTCPSocket(family: address.family)
        guard fd >= 0 else { throw TLSError(.configuration, host: host, reason: "socket: \(errnoText())") }
        SocketOptions.setInt(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if address.family == AF_INET6 { SocketOptions.setInt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
        if address.withSockaddr({ bind(fd, $0, $1) }) != 0 || listen(fd, 128) != 0 {
            let text = errnoText()
            _ = Glibc.close(fd)
            throw TLSError(.configuration, host: host, reason: "cannot listen on \(address.description): \(text)")
        }
        var bound = SocketAddress()
        bound.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutableBytes(of: &bound.storage) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &bound.length)
        }
        guard named == 0 else {
            let text = errnoText()
            _ = Glibc.close(fd)
            throw TLSError(.configuration, host: host, reason: "getsockname: \(text)")
        }
        // Nothing throws from here on: deinit (which closes the listener) runs only for a complete object.
        self.port = bound.port
        self.eventLoop = loop
        self.context = context
        self.configuration = configuration
        self.listener = SocketHandle(fd: fd, loop: loop)
        self.onAccept = onAccept
        listener.setHandlers(onReadable: { [weak self] in self?.acceptReady() }, onWritable: {})
        listener.setReadEnabled(true)
    }

    deinit { listener.close() }

    /// Stops listening and frees the port; connections already accepted stay open. Idempotent.
    public func close() {
        eventLoop.preconditionInEventLoop()
        listener.close()
    }

    private func acceptReady() {
        guard !listener.isClosed else { return }
        for _ in 0..<64 {
            var peer = SocketAddress()
            peer.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutableBytes(of: &peer.storage) { raw in
                accept(listener.fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &peer.length)
            }
            if fd < 0 { return }  // EAGAIN (drained), or EMFILE/ECONNABORTED: the source fires again
            // accept4 is not visible through Glibc's module: set the flags after the fact.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let connection = TLSConnection(accepted: fd, peer: peer, context: context, configuration: configuration,
                                           loop: eventLoop)
            onAccept(connection)
            connection.startServerHandshake()
        }
        // 64 accepted in one turn: let other work run, then continue (the backlog may not signal again).
        let me = UncheckedSendable(self)
        eventLoop.execute { me.value.acceptReady() }
    }
}

/// Receives a `TLSConnection`'s events, always on its event loop.
public protocol TLSConnectionDelegate: AnyObject {
    /// The handshake completed (client: the server's chain and host name verified). Writes flow from now on.
    func tlsConnectionDidBecomeReady(_ connection: TLSConnection)
    /// Decrypted bytes, up to 64 KiB per call; `bytes` is valid only during the call.
    func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer)
    /// Buffered output fell below half of `maxBufferedWriteBytes` after a refused write or after the buffer
    /// passed half the bound: a producer waiting on backpressure may write again.
    func tlsConnectionDidDrainWrites(_ connection: TLSConnection)
    /// The connection is closed; called exactly once, on a later loop turn than any call you made.
    /// `error` is nil for a clean close: `close()` or `abort()` called by us, or the peer's close_notify.
    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?)
}

extension TLSConnectionDelegate {
    public func tlsConnectionDidDrainWrites(_ connection: TLSConnection) {}
}

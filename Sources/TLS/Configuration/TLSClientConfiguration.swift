/// How a client `TLSConnection` connects and verifies its server.
///
/// There is no option to skip verification: tests use their own throwaway CA through `caFile`.
public struct TLSClientConfiguration: Sendable, Hashable {
    /// Path of a PEM CA bundle to verify the server chain against; nil = the system CA store
    /// (`SSL_CTX_set_default_verify_paths`).
    public var caFile: String?
    /// Seconds from `connect` until a TCP connection must be up (resolution and every address tried), default 10.
    public var connectTimeout: Double
    /// Seconds from TCP connect until the TLS handshake must be complete, default 10.
    public var handshakeTimeout: Double
    /// Bytes of queued plaintext plus unsent ciphertext allowed before `write` throws `.writeBufferFull`; default 4 MiB.
    public var maxBufferedWriteBytes: Int

    public init(caFile: String? = nil, connectTimeout: Double = 10, handshakeTimeout: Double = 10,
                maxBufferedWriteBytes: Int = 4 << 20) {
        self.caFile = caFile
        self.connectTimeout = connectTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maxBufferedWriteBytes = maxBufferedWriteBytes
    }
}

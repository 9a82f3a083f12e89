/// How a `TLSServer` presents itself: for the CCS emulator and tests.
public struct TLSServerConfiguration: Sendable, Hashable {
    /// PEM certificates: the server's own first, then any intermediates (the root may be left out).
    public var certificateChainPEM: String
    /// PEM private key (PKCS#8 or traditional) matching the first certificate.
    public var privateKeyPEM: String
    /// Seconds from accept until the TLS handshake must be complete, default 10.
    public var handshakeTimeout: Double
    /// Bytes of queued plaintext plus unsent ciphertext allowed per connection before `write` throws
    /// `.writeBufferFull`; default 4 MiB.
    public var maxBufferedWriteBytes: Int

    public init(certificateChainPEM: String, privateKeyPEM: String, handshakeTimeout: Double = 10,
                maxBufferedWriteBytes: Int = 4 << 20) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        self.handshakeTimeout = handshakeTimeout
        self.maxBufferedWriteBytes = maxBufferedWriteBytes
    }
}

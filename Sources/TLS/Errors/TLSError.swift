/// An error from the TLS layer, with the host it concerns and a human-readable reason.
///
/// OpenSSL's error queue and certificate verification result are turned into this type at the
/// boundary (see `OpenSSLErrorQueue`); no OpenSSL error leaks into the next connection.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, coarse enough to act on.
    public enum Kind: Sendable, Equatable {
        /// getaddrinfo found no address for the host (reason: gai_strerror text).
        case resolutionFailed
        /// TCP connect failed on every address (reason: the last errno text, e.g. "Connection refused").
        case connectFailed
        /// No TCP connection within `connectTimeout` seconds.
        case connectTimedOut
        /// No completed TLS handshake within `handshakeTimeout` seconds.
        case handshakeTimedOut
        /// The peer's certificate chain or host name did not verify (reason: X509_verify_cert_error_string).
        case certificateVerificationFailed
        /// The TLS handshake failed for another reason (reason: OpenSSL's error queue text).
        case handshakeFailed
        /// A TLS protocol error after the handshake (bad record, unexpected message...).
        case protocolError
        /// A write was refused because the buffered bytes would exceed `maxBufferedWriteBytes`; nothing was queued.
        case writeBufferFull
        /// The peer reset the connection or closed TCP without a TLS close_notify.
        case connectionReset
        /// The connection is closed (or closing); or a clean close could not flush in its grace period.
        case closed
        /// Bad configuration: unreadable CA file, bad PEM, port in use, OpenSSL setup failure.
        case configuration
    }

    public var kind: Kind
    /// The host the connection was for (client: the connect host; server: the peer address), if known.
    public var host: String?
    /// Why, e.g. "hostname mismatch", "certificate has expired", "Connection refused".
    public var reason: String

    public init(_ kind: Kind, host: String? = nil, reason: String) {
        self.kind = kind
        self.host = host
        self.reason = reason
    }

    /// e.g. "TLS certificate verification failed for fcm-xmpp.googleapis.com: hostname mismatch".
    public var description: String {
        let what: String
        switch kind {
        case .resolutionFailed: what = "host name resolution failed"
        case .connectFailed: what = "TCP connect failed"
        case .connectTimedOut: what = "TCP connect timed out"
        case .handshakeTimedOut: what = "TLS handshake timed out"
        case .certificateVerificationFailed: what = "TLS certificate verification failed"
        case .handshakeFailed: what = "TLS handshake failed"
        case .protocolError: what = "TLS protocol error"
        case .writeBufferFull: what = "TLS write buffer full"
        case .connectionReset: what = "connection reset"
        case .closed: what = "connection closed"
        case .configuration: what = "TLS configuration error"
        }
        if let host { return "\(what) for \(host): \(reason)" }
        return "\(what): \(reason)"
    }
}

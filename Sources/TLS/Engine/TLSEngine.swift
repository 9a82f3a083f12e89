import COpenSSL
import Glibc

/// The TLS engine as bytes in, bytes out over two OpenSSL memory BIOs: no socket, testable alone.
///
/// Feed ciphertext received from the network with `feedCiphertext`, drive `handshake()` until it returns
/// `.complete`, then `readPlaintext`/`writePlaintext`. After every call, send what `takeCiphertext()` returns.
/// TLS 1.2 minimum (RFC 5246, RFC 8446). A client sends SNI for a DNS host (RFC 6066 §3) and verifies
/// the server's host name (RFC 6125 via `SSL_set1_host`) or IP literal (`X509_VERIFY_PARAM_set1_ip_asc`).
///
/// Not thread-safe: use one engine from one thread (or one event loop) at a time.
public final class TLSEngine {
    /// Which side of the handshake this engine plays.
    public enum Role: Sendable, Equatable { case client, server }

    /// Where the handshake stands after a `handshake()` call.
    public enum HandshakeProgress: Sendable, Equatable {
        /// More ciphertext from the peer is needed (send `takeCiphertext()` first).
        case inProgress
        /// Done; for a client, the server's chain and host name verified.
        case complete
    }

    /// The outcome of `readPlaintext(into:)`.
    public enum ReadResult: Sendable, Equatable {
        /// This many plaintext bytes were written to the front of the buffer (at least 1).
        case bytes(Int)
        /// No complete record is buffered: feed more ciphertext.
        case wantRead
        /// The peer sent close_notify: no more plaintext will come.
        case closeNotify
    }

    public let role: Role
    /// The host the client verifies, or a label for the server's peer; used in errors.
    public let peerName: String?
    // SSL owns both BIOs after SSL_set_bio; SSL_free frees all three, exactly once, in deinit.
    private let ssl: OpaquePointer
    private let networkIn: OpaquePointer   // we BIO_write ciphertext from the peer; SSL reads it
    private let networkOut: OpaquePointer  // SSL writes ciphertext; we BIO_read it for the peer
    private let context: TLSContext        // keeps the SSL_CTX alive as long as the SSL (belt and braces)

    /// False only while `networkOut` is known to be empty: set before every call into SSL that may write
    /// to it (handshake, read, write, shutdown), cleared when `pendingCiphertextCount` finds it empty.
    /// `pendingCiphertextCount` then answers 0 without asking the BIO (a `BIO_ctrl` call of about 120
    /// instructions, which a connection asks once per stanza it writes). Unchecked exclusivity: an engine
    /// is used on its connection's loop only, and no access to it stays open across a call.
    @exclusivity(unchecked) private var outputMayBePending = true

    /// Whether the handshake has completed.
    public private(set) var isHandshakeComplete = false
    /// Whether the peer's close_notify arrived.
    public private(set) var receivedCloseNotify = false
    /// Whether our close_notify has been produced (`shutdown()`).
    public private(set) var sentCloseNotify = false

    private init(role: Role, peerName: String?, ssl: OpaquePointer, networkIn: OpaquePointer,
                 networkOut: OpaquePointer, context: TLSContext) {
        self.role = role
        self.peerName = peerName
        self.ssl = ssl
        self.networkIn = networkIn
        self.networkOut = networkOut
        self.context = context
    }

    deinit { SSL_free(ssl) }

    /// A client engine for `host`: SNI for a DNS name, and the certificate must match `host`
    /// (DNS name per RFC 6125, or an IPv4/IPv6 literal matched against IP subjectAltNames).
    /// - Throws: `.configuration` if `context` is not a client context or OpenSSL fails.
    public static func client(context: TLSContext, host: String) throws(TLSError) -> TLSEngine {
        guard context.role == .client else { throw TLSError(.configuration, host: host, reason: "not a client context") }
        let engine = try make(role: .client, peerName: host, context: context)
        let ssl = engine.ssl
        OpenSSLErrorQueue.clear()
        if isIPLiteral(host) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                throw OpenSSLErrorQueue.error(.configuration, host: host, "cannot set IP to verify")
            }
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, host) == 1 else {
                throw OpenSSLErrorQueue.error(.configuration, host: host, "cannot set host name to verify")
            }
            guard ccsd_SSL_set_tlsext_host_name(ssl, host) == 1 else {
                throw OpenSSLErrorQueue.error(.configuration, host: host, "cannot set SNI")
            }
        }
        SSL_set_connect_state(ssl)
        return engine
    }

    /// A server engine presenting `context`'s certificate; `peerName` labels errors (e.g. "127.0.0.1:50123").
    /// - Throws: `.configuration` if `context` is not a server context or OpenSSL fails.
    public static func server(context: TLSContext, peerName: String? = nil) throws(TLSError) -> TLSEngine {
        guard context.role == .server else { throw TLSError(.configuration, host: peerName, reason: "not a server context") }
        let engine = try make(role: .server, peerName: peerName, context: context)
        SSL_set_accept_state(engine.ssl)
        return engine
    }

    private static func make(role: Role, peerName: String?, context: TLSContext) throws(TLSError) -> TLSEngine {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.pointer) else {
            throw OpenSSLErrorQueue.error(.configuration, host: peerName, "SSL_new")
        }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.configuration, host: peerName, "BIO_new")
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.configuration, host: peerName, "BIO_new")
        }
        // An empty input BIO means "no data yet" (retry), not EOF: socket EOF is handled by the caller.
        _ = ccsd_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        return TLSEngine(role: role, peerName: peerName, ssl: ssl, networkIn: input, networkOut: output, context: context)
    }

    // MARK: Bytes in

    /// Appends ciphertext received from the peer (the memory BIO grows as needed).
    public func feedCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        var offset = 0
        while offset < bytes.count {
            let chunk = Int32(min(bytes.count - offset, Int(Int32.max)))
            let written = BIO_write(networkIn, base + offset, chunk)
            precondition(written > 0, "memory BIO write failed (out of memory)")
            offset += Int(written)
        }
    }

    /// Appends ciphertext received from the peer.
    public func feedCiphertext(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feedCiphertext($0) }
    }

    /// Advances the handshake with the ciphertext fed so far.
    /// - Throws: `.certificateVerificationFailed` (reason from `X509_verify_cert_error_string`, e.g.
    ///   "hostname mismatch") or `.handshakeFailed` (OpenSSL's error queue text). Send `takeCiphertext()`
    ///   even after a throw: it may hold the alert for the peer.
    public func handshake() throws(TLSError) -> HandshakeProgress {
        if isHandshakeComplete { return .complete }
        OpenSSLErrorQueue.clear()
        outputMayBePending = true
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            isHandshakeComplete = true
            return .complete
        }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .inProgress
        default:
            throw handshakeError(code: code)
        }
    }

    private func handshakeError(code: Int32) -> TLSError {
        if role == .client {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                OpenSSLErrorQueue.clear()
                let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "error \(verify)"
                return TLSError(.certificateVerificationFailed, host: peerName, reason: text)
            }
        }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN {
            return TLSError(.handshakeFailed, host: peerName,
                            reason: OpenSSLErrorQueue.drain(fallback: "peer closed the connection during the handshake"))
        }
        return TLSError(.handshakeFailed, host: peerName, reason: OpenSSLErrorQueue.drain())
    }

    // MARK: Plaintext

    /// Decrypts buffered ciphertext into `buffer` (at most one TLS record, ≤ 16 KiB, per call).
    /// Call until it returns `.wantRead` or `.closeNotify`.
    /// - Throws: `.protocolError` with OpenSSL's text for a bad record or alert from the peer.
    public func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> ReadResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .wantRead }
        if receivedCloseNotify { return .closeNotify }
        OpenSSLErrorQueue.clear()
        outputMayBePending = true  // a read may answer (a TLS 1.3 KeyUpdate, an alert)
        let rc = SSL_read(ssl, base, Int32(min(buffer.count, Int(Int32.max))))
        if rc > 0 {
            if !isHandshakeComplete { isHandshakeComplete = true }
            return .bytes(Int(rc))
        }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantRead
        case SSL_ERROR_ZERO_RETURN:
            receivedCloseNotify = true
            return .closeNotify
        default:
            throw TLSError(.protocolError, host: peerName, reason: OpenSSLErrorQueue.drain())
        }
    }

    /// Encrypts all of `bytes` (several records if over 16 KiB); the ciphertext waits in `takeCiphertext()`.
    /// Call only after the handshake completed.
    /// - Throws: `.closed` after `shutdown()`, `.protocolError` with OpenSSL's text otherwise.
    public func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if sentCloseNotify { throw TLSError(.closed, host: peerName, reason: "write after close_notify") }
        var offset = 0
        outputMayBePending = true
        while offset < bytes.count {
            OpenSSLErrorQueue.clear()
            let chunk = Int32(min(bytes.count - offset, 1 << 30))
            let rc = SSL_write(ssl, base + offset, chunk)
            if rc > 0 {
                offset += Int(rc)
                continue
            }
            // The output BIO is memory and grows, so SSL_write never wants to wait for the network.
            throw TLSError(.protocolError, host: peerName, reason: OpenSSLErrorQueue.drain(fallback: "SSL_write failed"))
        }
    }

    // MARK: Bytes out

    /// Ciphertext waiting to be sent to the peer, in bytes.
    public var pendingCiphertextCount: Int {
        guard outputMayBePending else { return 0 }
        let pending = Int(ccsd_BIO_pending(networkOut))
        if pending == 0 { outputMayBePending = false }
        return pending
    }

    /// Removes and returns all ciphertext waiting to be sent to the peer.
    public func takeCiphertext() -> [UInt8] {
        var out: [UInt8] = []
        takeCiphertext(appendingTo: &out)
        return out
    }

    /// Moves all pending ciphertext to the end of `buffer`.
    public func takeCiphertext(appendingTo buffer: inout [UInt8]) {
        var pending = pendingCiphertextCount
        while pending > 0 {
            let start = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: pending))
            let read = buffer.withUnsafeMutableBytes { raw in
                BIO_read(networkOut, raw.baseAddress! + start, Int32(min(pending, Int(Int32.max))))
            }
            buffer.removeLast(pending - max(0, Int(read)))
            if read <= 0 { break }
            pending = pendingCiphertextCount
        }
    }

    // MARK: Close

    /// Produces our close_notify alert (RFC 8446 §6.1) in `takeCiphertext()`. Idempotent.
    /// Does not wait for the peer's close_notify.
    public func shutdown() {
        guard !sentCloseNotify else { return }
        sentCloseNotify = true
        guard isHandshakeComplete else { return }
        OpenSSLErrorQueue.clear()
        outputMayBePending = true
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clear()
    }

    // MARK: Introspection

    /// The negotiated protocol, e.g. "TLSv1.3"; nil before the handshake.
    public var negotiatedProtocol: String? {
        guard isHandshakeComplete, let name = SSL_get_version(ssl) else { return nil }
        return String(cString: name)
    }

    /// Whether `host` is an IPv4 or IPv6 literal (verified as an IP address, no SNI).
    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

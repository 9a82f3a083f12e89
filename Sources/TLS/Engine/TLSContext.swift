import COpenSSL
import Glibc
import Synchronization

/// An OpenSSL `SSL_CTX`: the settings shared by many `TLSEngine`s of one role.
///
/// Both roles: TLS 1.2 minimum (RFC 8446 / RFC 5246), no compression, no renegotiation.
/// Client: peer verification on (`SSL_VERIFY_PEER`) against `caFile` or the system store.
/// Server: the configured certificate chain and key.
public final class TLSContext: @unchecked Sendable {
    // @unchecked Sendable: an SSL_CTX is fully configured in the factory methods and never changed
    // afterwards; OpenSSL documents concurrent SSL_new/refcounting on a configured SSL_CTX as safe.
    let pointer: OpaquePointer
    /// Which side engines made from this context play.
    public let role: TLSEngine.Role

    private init(pointer: OpaquePointer, role: TLSEngine.Role) {
        self.pointer = pointer
        self.role = role
    }

    deinit { SSL_CTX_free(pointer) }

    /// A client context verifying servers against `configuration.caFile` or the system CA store.
    /// - Throws: `.configuration` if OpenSSL fails or the CA file cannot be loaded.
    public static func client(configuration: TLSClientConfiguration) throws(TLSError) -> TLSContext {
        OpenSSLErrorQueue.clear()
        guard let raw = SSL_CTX_new(TLS_client_method()) else {
            throw OpenSSLErrorQueue.error(.configuration, "SSL_CTX_new")
        }
        let context = TLSContext(pointer: raw, role: .client)  // owns raw from here: freed once, in deinit
        try context.applyCommonSettings()
        SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nil)
        if let caFile = configuration.caFile {
            guard SSL_CTX_load_verify_locations(raw, caFile, nil) == 1 else {
                throw OpenSSLErrorQueue.error(.configuration, "cannot load CA file \(caFile)")
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(raw) == 1 else {
                throw OpenSSLErrorQueue.error(.configuration, "cannot load the system CA store")
            }
        }
        return context
    }

    /// A server context presenting `configuration`'s certificate chain and key.
    /// - Throws: `.configuration` for unreadable PEM or a key that does not match the certificate.
    public static func server(configuration: TLSServerConfiguration) throws(TLSError) -> TLSContext {
        OpenSSLErrorQueue.clear()
        guard let raw = SSL_CTX_new(TLS_server_method()) else {
            throw OpenSSLErrorQueue.error(.configuration, "SSL_CTX_new")
        }
        let context = TLSContext(pointer: raw, role: .server)
        try context.applyCommonSettings()
        _ = SSL_CTX_set_options(raw, ccsd_SSL_OP_CIPHER_SERVER_PREFERENCE())

        let chain = try PEM.readCertificates(configuration.certificateChainPEM)
        guard let leaf = chain.first else {
            throw TLSError(.configuration, reason: "certificateChainPEM holds no certificate")
        }
        defer { for cert in chain { X509_free(cert) } }
        guard SSL_CTX_use_certificate(raw, leaf) == 1 else {
            throw OpenSSLErrorQueue.error(.configuration, "SSL_CTX_use_certificate")
        }
        for intermediate in chain.dropFirst() {
            X509_up_ref(intermediate)  // add_extra_chain_cert takes ownership on success
            guard ccsd_SSL_CTX_add_extra_chain_cert(raw, intermediate) == 1 else {
                X509_free(intermediate)
                throw OpenSSLErrorQueue.error(.configuration, "SSL_CTX_add_extra_chain_cert")
            }
        }
        let key = try PEM.readPrivateKey(configuration.privateKeyPEM)
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(raw, key) == 1, SSL_CTX_check_private_key(raw) == 1 else {
            throw OpenSSLErrorQueue.error(.configuration, "private key does not match the certificate")
        }
        return context
    }

    private func applyCommonSettings() throws(TLSError) {
        guard ccsd_SSL_CTX_set_min_proto_version_tls12(pointer) == 1 else {
            throw OpenSSLErrorQueue.error(.configuration, "cannot require TLS 1.2")
        }
        _ = SSL_CTX_set_options(pointer, ccsd_SSL_OP_NO_COMPRESSION() | ccsd_SSL_OP_NO_RENEGOTIATION())
        _ = ccsd_SSL_CTX_set_partial_write_modes(pointer)
    }

    // MARK: Client context cache

    private static let clientCache = Mutex<[String: TLSContext]>([:])

    /// The shared client context for `configuration.caFile` (one per CA file, or one for the system store),
    /// made on first use. A CA file that changed (size or modification time) is read again on the next
    /// connect, so a rotated bundle takes effect without a restart.
    static func cachedClient(configuration: TLSClientConfiguration) throws(TLSError) -> TLSContext {
        var key = "system"
        if let caFile = configuration.caFile {
            var info = stat()
            let version = stat(caFile, &info) == 0 ? "\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec):\(info.st_ino)" : "missing"
            key = "file:\(caFile)@\(version)"
        }
        if let hit = clientCache.withLock({ $0[key] }) { return hit }
        let made = try client(configuration: configuration)
        return clientCache.withLock { cache in
            if let raced = cache[key] { return raced }
            cache[key] = made
            return made
        }
    }
}

/// PEM parsing over memory BIOs (also used by the `Certificates` module).
public enum PEM {
    /// Every certificate in `pem`, in order; the caller frees each with X509_free.
    /// - Throws: `TLSError` (`.configuration`) when `pem` holds no certificate.
    public static func readCertificates(_ pem: String) throws(TLSError) -> [OpaquePointer] {
        var bytes = Array(pem.utf8)
        OpenSSLErrorQueue.clear()
        let result: [OpaquePointer] = bytes.withUnsafeMutableBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return [] }
            defer { BIO_free(bio) }
            var certs: [OpaquePointer] = []
            while let cert = PEM_read_bio_X509(bio, nil, nil, nil) { certs.append(cert) }
            return certs
        }
        OpenSSLErrorQueue.clear()  // the loop always ends with a "no start line" error
        if result.isEmpty { throw TLSError(.configuration, reason: "no PEM certificate found") }
        return result
    }

    /// The private key in `pem`; the caller frees it with EVP_PKEY_free.
    /// - Throws: `TLSError` (`.configuration`) naming OpenSSL's reason when it cannot be read.
    public static func readPrivateKey(_ pem: String) throws(TLSError) -> OpaquePointer {
        var bytes = Array(pem.utf8)
        OpenSSLErrorQueue.clear()
        let key: OpaquePointer? = bytes.withUnsafeMutableBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw OpenSSLErrorQueue.error(.configuration, "cannot read PEM private key") }
        return key
    }
}

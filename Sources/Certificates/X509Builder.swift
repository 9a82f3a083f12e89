import COpenSSL
import TLS

/// Small helpers over OpenSSL's X509 API for `CertificateAuthority`. Every returned pointer is owned by the caller.
enum X509Builder {
    /// A fresh EC P-256 key (EVP_PKEY).
    static func makeKey() throws(TLSError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let key = ccsd_EVP_EC_gen_P256() else { throw OpenSSLErrorQueue.error(.configuration, "EC key generation") }
        return key
    }

    /// "DNS:a,DNS:b,IP:127.0.0.1", or nil when there is nothing to list.
    static func subjectAltName(dnsNames: [String], ipAddresses: [String]) -> String? {
        let entries = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        return entries.isEmpty ? nil : entries.joined(separator: ",")
    }

    /// A signed X509v3 certificate. `issuer` nil = self-signed (issuer name = subject name).
    static func makeCertificate(commonName: String, publicKey: OpaquePointer, issuer: OpaquePointer?,
                                signingKey: OpaquePointer, notBeforeOffset: Int, notAfterOffset: Int,
                                extensions: [(Int32, String)]) throws(TLSError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let cert = X509_new() else { throw OpenSSLErrorQueue.error(.configuration, "X509_new") }
        do {
            try fill(cert, commonName: commonName, publicKey: publicKey, issuer: issuer, signingKey: signingKey,
                     notBeforeOffset: notBeforeOffset, notAfterOffset: notAfterOffset, extensions: extensions)
        } catch {
            X509_free(cert)
            throw error
        }
        return cert
    }

    private static func fill(_ cert: OpaquePointer, commonName: String, publicKey: OpaquePointer, issuer: OpaquePointer?,
                             signingKey: OpaquePointer, notBeforeOffset: Int, notAfterOffset: Int,
                             extensions: [(Int32, String)]) throws(TLSError) {
        guard X509_set_version(cert, 2) == 1 else { throw OpenSSLErrorQueue.error(.configuration, "X509_set_version") }
        var serial: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &serial) { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
        serial = (serial & 0x7fff_ffff_ffff_ffff) | 1
        guard ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), serial) == 1,
              X509_gmtime_adj(X509_getm_notBefore(cert), notBeforeOffset) != nil,
              X509_gmtime_adj(X509_getm_notAfter(cert), notAfterOffset) != nil else {
            throw OpenSSLErrorQueue.error(.configuration, "serial or validity")
        }
        guard let subject = X509_get_subject_name(cert),
              ccsd_X509_NAME_add_text(subject, "CN", commonName) == 1 else {
            throw OpenSSLErrorQueue.error(.configuration, "subject name")
        }
        let issuerName = issuer.map { X509_get_subject_name($0) } ?? subject
        guard X509_set_issuer_name(cert, issuerName) == 1, X509_set_pubkey(cert, publicKey) == 1 else {
            throw OpenSSLErrorQueue.error(.configuration, "issuer name or public key")
        }
        var context = X509V3_CTX()
        ccsd_X509V3_set_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer ?? cert, cert, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw OpenSSLErrorQueue.error(.configuration, "extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(cert, ext, -1) == 1 else { throw OpenSSLErrorQueue.error(.configuration, "X509_add_ext") }
        }
        guard X509_sign(cert, signingKey, EVP_sha256()) > 0 else { throw OpenSSLErrorQueue.error(.configuration, "X509_sign") }
    }

    static func pem(certificate: OpaquePointer) throws(TLSError) -> String {
        try writePEM { PEM_write_bio_X509($0, certificate) }
    }

    static func pem(privateKey: OpaquePointer) throws(TLSError) -> String {
        try writePEM { PEM_write_bio_PrivateKey($0, privateKey, nil, nil, 0, nil, nil) }
    }

    private static func writePEM(_ write: (OpaquePointer) -> Int32) throws(TLSError) -> String {
        OpenSSLErrorQueue.clear()
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrorQueue.error(.configuration, "BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw OpenSSLErrorQueue.error(.configuration, "PEM write") }
        let count = Int(ccsd_BIO_pending(bio))
        var bytes = [UInt8](repeating: 0, count: count)
        let read = BIO_read(bio, &bytes, Int32(count))
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }
}

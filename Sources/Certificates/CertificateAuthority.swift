import COpenSSL
import TLS

/// Throwaway certificates made with OpenSSL's API (EC P-256 keys, SHA-256 signatures), for the CCS emulator
/// and tests. Never for production: keys live in memory as PEM strings.
public struct CertificateAuthority: Sendable {
    /// The CA certificate, PEM: give it to clients as `caFile` content.
    public let certificatePEM: String
    /// The CA's private key, PEM (PKCS#8).
    public let privateKeyPEM: String

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// A new self-signed CA (basicConstraints CA:TRUE, keyCertSign), valid from one hour ago for `validDays` days.
    /// - Throws: `.configuration` with OpenSSL's error text.
    public static func generate(commonName: String = "ccsd test CA", validDays: Int = 30) throws(TLSError) -> CertificateAuthority {
        let key = try X509Builder.makeKey()
        defer { EVP_PKEY_free(key) }
        let cert = try X509Builder.makeCertificate(
            commonName: commonName, publicKey: key, issuer: nil, signingKey: key,
            notBeforeOffset: -3600, notAfterOffset: validDays * 86400,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        defer { X509_free(cert) }
        return CertificateAuthority(certificatePEM: try X509Builder.pem(certificate: cert),
                                    privateKeyPEM: try X509Builder.pem(privateKey: key))
    }

    /// A server certificate signed by this CA, with subjectAltName `dnsNames` (DNS) and `ipAddresses` (IP, v4 or v6)
    /// and extendedKeyUsage serverAuth. Validity runs from now + `notBeforeOffset` to now + `notAfterOffset`
    /// seconds (so `notAfterOffset: -3600` gives an expired certificate).
    /// - Returns: the leaf certificate PEM (no chain: the CA is the trust anchor) and its private key PEM.
    /// - Throws: `.configuration` with OpenSSL's error text (e.g. a malformed IP address).
    public func issueServerCertificate(dnsNames: [String], ipAddresses: [String] = [], notBeforeOffset: Int = -3600,
                                       notAfterOffset: Int = 30 * 86400) throws(TLSError) -> (certificatePEM: String, privateKeyPEM: String) {
        let caCerts = try PEM.readCertificates(certificatePEM)
        defer { caCerts.forEach { X509_free($0) } }
        let caKey = try PEM.readPrivateKey(privateKeyPEM)
        defer { EVP_PKEY_free(caKey) }
        let key = try X509Builder.makeKey()
        defer { EVP_PKEY_free(key) }
        var extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_authority_key_identifier, "keyid"),
        ]
        if let san = X509Builder.subjectAltName(dnsNames: dnsNames, ipAddresses: ipAddresses) {
            extensions.append((NID_subject_alt_name, san))
        }
        let cert = try X509Builder.makeCertificate(
            commonName: dnsNames.first ?? ipAddresses.first ?? "server", publicKey: key, issuer: caCerts[0],
            signingKey: caKey, notBeforeOffset: notBeforeOffset, notAfterOffset: notAfterOffset, extensions: extensions)
        defer { X509_free(cert) }
        return (try X509Builder.pem(certificate: cert), try X509Builder.pem(privateKey: key))
    }

    /// A self-signed server certificate (no CA) for `dnsNames`, valid for 30 days: clients report
    /// "self-signed certificate".
    public static func selfSignedServerCertificate(dnsNames: [String]) throws(TLSError) -> (certificatePEM: String, privateKeyPEM: String) {
        let key = try X509Builder.makeKey()
        defer { EVP_PKEY_free(key) }
        var extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_ext_key_usage, "serverAuth"),
        ]
        if let san = X509Builder.subjectAltName(dnsNames: dnsNames, ipAddresses: []) {
            extensions.append((NID_subject_alt_name, san))
        }
        let cert = try X509Builder.makeCertificate(
            commonName: dnsNames.first ?? "server", publicKey: key, issuer: nil, signingKey: key,
            notBeforeOffset: -3600, notAfterOffset: 30 * 86400, extensions: extensions)
        defer { X509_free(cert) }
        return (try X509Builder.pem(certificate: cert), try X509Builder.pem(privateKey: key))
    }
}

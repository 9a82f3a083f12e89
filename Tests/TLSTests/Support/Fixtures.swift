import Foundation
import Glibc
import Certificates
import TLS

/// A throwaway CA written to a temporary file, and a server certificate it issued.
struct Fixtures {
    let ca: CertificateAuthority
    let caFile: String
    let server: TLSServerConfiguration

    /// A fresh CA and a certificate for `dnsNames`/`ipAddresses` (default: localhost, 127.0.0.1, ::1).
    static func make(dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1", "::1"],
                     notBeforeOffset: Int = -3600, notAfterOffset: Int = 86400) throws -> Fixtures {
        let ca = try CertificateAuthority.generate()
        let leaf = try ca.issueServerCertificate(dnsNames: dnsNames, ipAddresses: ipAddresses,
                                                 notBeforeOffset: notBeforeOffset, notAfterOffset: notAfterOffset)
        return Fixtures(ca: ca, caFile: try writeTemporary(ca.certificatePEM),
                        server: TLSServerConfiguration(certificateChainPEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM))
    }

    func client(_ tweak: (inout TLSClientConfiguration) -> Void = { _ in }) -> TLSClientConfiguration {
        var configuration = TLSClientConfiguration(caFile: caFile, connectTimeout: 5, handshakeTimeout: 5)
        tweak(&configuration)
        return configuration
    }
}

func writeTemporary(_ text: String) throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-tls-test-\(UUID().uuidString).pem")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
}


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

/// Writes `text` to a new file in this test process's own temporary directory; returns its path.
func writeTemporary(_ text: String) throws -> String {
    let url = URL(fileURLWithPath: temporaryFilesDirectory).appendingPathComponent("\(UUID().uuidString).pem")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
}

/// One directory per test process for the files tests write, removed at exit; directories that test
/// processes which no longer run left behind (killed before their exit handler) are removed first.
private let temporaryFilesDirectory: String = {
    let base = FileManager.default.temporaryDirectory.path
    let prefix = "ccsd-tls-tests-"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix(prefix) {
        if let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH {
            try? FileManager.default.removeItem(atPath: base + "/" + name)
        }
    }
    let path = base + "/" + prefix + "\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    atexit {
        try? FileManager.default.removeItem(atPath: FileManager.default.temporaryDirectory.path + "/ccsd-tls-tests-\(getpid())")
    }
    return path
}()


import Foundation
import Testing
import XMPP
@testable import Daemon

/// `Logger.addSecrets`: the server key and its SASL PLAIN form never reach a log line, in any format,
/// whichever message or value carries them.
@Suite struct LoggerSecretsTests {
    static let key = "AAAAsentinel:APA91bLoggerSecretKey0123456789"

    /// Logs `message` with `value` through a logger writing to a pipe; returns what it wrote.
    func logged(format: Logger.Format, secrets: Bool, _ message: String, _ value: String) throws -> String {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let logger = Logger(minimum: .debug, format: format, fileDescriptor: fds[1])
        if secrets {
            logger.addSecrets(XMPPCredentials(username: "123", password: Secret(Self.key)))
        }
        logger.warning(message, ["value": value, "other": "kept"])
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(fds[0], &buffer, buffer.count)
        return String(decoding: buffer[0..<max(count, 0)], as: UTF8.self)
    }

    @Test(arguments: Logger.Format.allCases)
    func theKeyAndItsPlainFormAreRedactedInEveryFormat(format: Logger.Format) throws {
        let plain = XMPPCredentials(username: "123", password: Secret(Self.key)).plainInitialResponse
        let line = try logged(format: format, secrets: true, "jid 123@\(Self.key)", "echo \(plain) and \"\(Self.key)\"")
        #expect(!line.contains(Self.key) && !line.contains(plain), "\(line)")
        #expect(line.contains("<redacted>") && line.contains("kept"))
        // Without the secrets set, the same line carries the key (the redaction is what removes it).
        #expect(try logged(format: format, secrets: false, "jid 123@\(Self.key)", "").contains(Self.key))
    }

    @Test func aRotatedKeyStaysSecretAlongsideTheNewOne() throws {
        let logger = Logger(minimum: .debug, fileDescriptor: -1)
        logger.addSecrets(XMPPCredentials(username: "1", password: Secret("old-key-0123456789")))
        logger.addSecrets(XMPPCredentials(username: "1", password: Secret("new-key-0123456789")))
        let secrets = logger.secrets.withLock { $0 }
        #expect(Logger.redact("old-key-0123456789 new-key-0123456789", secrets) == "<redacted> <redacted>")
    }
}

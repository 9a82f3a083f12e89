import CCS
import Foundation
import Testing
import XMPP
@testable import Daemon

/// The log formats (`plain`, `journal`, `json`), the changeable minimum level, the automatic choice of
/// `journal` under systemd, and that the server key never reaches a log line in any format.
@Suite struct LoggerFormatTests {
    /// Logs through a `Logger` writing to a temporary file; returns what it wrote.
    static func capture(_ format: Logger.Format, minimum: Logger.Level = .debug, _ body: (Logger) -> Void) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-log-\(UUID().uuidString)").path
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        body(Logger(minimum: minimum, format: format, fileDescriptor: fd))
        // Read back with read(2): Foundation's file reading leaks a buffer (docs/sanitizers.md).
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            try #require(count >= 0)
            if count == 0 { break }
            bytes += chunk[0..<count]
            offset += off_t(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func journalPrefixesEachLineWithItsSyslogPriority() throws {
        let text = try Self.capture(.journal) { logger in
            logger.debug("d")
            logger.info("i", ["connection": "1"])
            logger.warning("w")
            logger.error("e")
        }
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.map { String($0.prefix(3)) } == ["<7>", "<6>", "<4>", "<3>"])
        #expect(lines[1].dropFirst(3).wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=info msg=i connection=1/) != nil)
    }

    @Test func plainIsUnchanged() throws {
        let text = try Self.capture(.plain) { $0.warning("connection closed", ["reason": "a \"b\"\nc", "id": "7"]) }
        #expect(text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=warning msg="connection closed" reason="a \\"b\\"\\u000ac" id=7\n/) != nil)
    }

    @Test func jsonIsOneEscapedObjectPerLine() throws {
        let hostile = "quote \" backslash \\ newline \n tab \t nul \u{0} del \u{7F} ls \u{2028} é 🚀"
        let text = try Self.capture(.json) { logger in
            logger.error(hostile, ["field": hostile, "message_id": "m-1"])
            logger.log(.info, "second", fields: [(key: "n", value: "2")])
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty)  // two lines, each ending in a newline, none split
        let first = try #require(try JSONValue.parse(Data(lines[0].utf8)).objectValue)
        #expect(first["level"] == .string("error"))
        #expect(first["msg"] == .string(hostile))
        #expect(first["fields"]?.objectValue?["field"] == .string(hostile))
        #expect(first["fields"]?.objectValue?["message_id"] == .string("m-1"))
        #expect((first["time"]?.stringValue ?? "").wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil)
        let second = try #require(try JSONValue.parse(Data(lines[1].utf8)).objectValue)
        #expect(second["msg"] == .string("second") && second["fields"]?.objectValue?["n"] == .string("2"))
        #expect(Set(first.keys) == ["time", "level", "msg", "fields"])
    }

    @Test func theMinimumLevelChangesWhileLogging() throws {
        let text = try Self.capture(.plain, minimum: .warning) { logger in
            logger.info("hidden-1")
            logger.setMinimum(.debug)
            #expect(logger.minimum == .debug && logger.isEnabled(.debug))
            logger.debug("shown-1")
            // From other threads at once: every line whole, none lost.
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                for line in 0..<25 { logger.info("shown-\(index)-\(line)") }
            }
            logger.setMinimum(.error)
            logger.warning("hidden-2")
        }
        #expect(!text.contains("hidden"))
        #expect(text.contains("msg=shown-1"))
        #expect(text.split(separator: "\n").filter { $0.contains("msg=shown-") }.count == 201)
    }

    @Test func theServerKeyNeverAppearsAndTokensAreShortenedInEveryFormat() throws {
        let key = Secret("AAAA-server-key-never-in-logs")
        let token = "dGhpcyBpcyBhIHJlZ2lzdHJhdGlvbiB0b2tlbiBvZiBzb21lIGxlbmd0aA-APA91bExampleTokenTail"
        var configuration = Configuration()
        configuration.senderID = "1"
        configuration.serverKey = key
        for format in Logger.Format.allCases {
            let text = try Self.capture(format) { logger in
                logger.error("authentication failed with \(key)", ["key": "\(key)", "debug": String(reflecting: key),
                                                                    "configuration": "\(configuration)",
                                                                    "to": shortenedToken(token)])
            }
            #expect(!text.contains(key.revealed), "\(format)")
            #expect(text.contains("<redacted>"), "\(format)")
            #expect(!text.contains(token), "\(format)")
        }
    }

    @Test func journalIsChosenOnlyWhenStderrIsTheJournalStream() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-stream-\(UUID().uuidString)").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        var status = stat()
        try #require(fstat(fd, &status) == 0)
        let own = "\(status.st_dev):\(status.st_ino)"
        #expect(Logger.Format.automatic(environment: ["JOURNAL_STREAM": own], fileDescriptor: fd) == .journal)
        #expect(Logger.Format.automatic(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"], fileDescriptor: fd) == .plain)
        #expect(Logger.Format.automatic(environment: [:], fileDescriptor: fd) == .plain)
        #expect(Logger.Format.automatic(environment: ["JOURNAL_STREAM": "garbage"], fileDescriptor: fd) == .plain)
    }
}

/// The server key from systemd's credential directory (`LoadCredential=server-key:…`).
@Suite struct ServerKeyCredentialTests {
    static func directory(key: String?) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-cred-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        if let key { try Data(key.utf8).write(to: URL(fileURLWithPath: path + "/server-key")) }
        return path
    }

    @Test func theCredentialIsReadWhenSystemdPassesIt() throws {
        let credentials = try Self.directory(key: "AAAA-credential-key\n")
        let fileKey = try Self.directory(key: "AAAA-file-key")
        defer {
            try? FileManager.default.removeItem(atPath: credentials)
            try? FileManager.default.removeItem(atPath: fileKey)
        }
        var configuration = Configuration()
        configuration.serverKeyFile = fileKey + "/server-key"  // the example config's server_key_file
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        try configuration.loadServerKey(flagFile: nil, environment: environment)
        #expect(configuration.serverKey.revealed == "AAAA-credential-key")
        // The flag and CCSD_SERVER_KEY still come first.
        try configuration.loadServerKey(flagFile: fileKey + "/server-key", environment: environment)
        #expect(configuration.serverKey.revealed == "AAAA-file-key")
        var fromEnvironment = Configuration()
        try fromEnvironment.loadServerKey(flagFile: nil, environment: environment.merging(["CCSD_SERVER_KEY": "AAAA-env"]) { $1 })
        #expect(fromEnvironment.serverKey.revealed == "AAAA-env")
    }

    @Test func withoutTheCredentialServerKeyFileIsUsed() throws {
        let empty = try Self.directory(key: nil)
        let fileKey = try Self.directory(key: "AAAA-file-key")
        defer {
            try? FileManager.default.removeItem(atPath: empty)
            try? FileManager.default.removeItem(atPath: fileKey)
        }
        var configuration = Configuration()
        configuration.serverKeyFile = fileKey + "/server-key"
        try configuration.loadServerKey(flagFile: nil, environment: ["CREDENTIALS_DIRECTORY": empty])
        #expect(configuration.serverKey.revealed == "AAAA-file-key")
        #expect(Configuration.serverKeyCredentialPath(environment: [:]) == nil)
    }

    @Test func logLevelIsAConfigurationKey() throws {
        var configuration = Configuration()
        try configuration.apply(fileContents: Data(#"{"log_level":"warning"}"#.utf8), path: "ccsd.json")
        #expect(configuration.logLevel == .warning)
        #expect(throws: ConfigurationError(field: "log_level", rule: #"must be "debug", "info", "warning" or "error", got "loud""#)) {
            var bad = Configuration()
            try bad.apply(fileContents: Data(#"{"log_level":"loud"}"#.utf8), path: "ccsd.json")
        }
    }
}

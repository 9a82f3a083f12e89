import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing
import XMPP

/// A sentinel server key and sentinel registration tokens through every path that reports something:
/// configuration errors at start and on reload, debug logs, rejected lines, nacks, unreadable upstream, a
/// stream error and a SASL failure whose text echoes the credentials, TLS errors; in every log format.
/// stderr and the events never contain the key (nor its SASL PLAIN form); a whole token appears only in the
/// event fields documented to carry one (README, "Events": `to`, `registration_id`,
/// `failed_registration_ids`, `from`, `device_registration_id`, `raw`).
@Suite struct SecretHygieneTests {
    static let tokenMarker = "SNTLTOKHYG"

    /// A 160-character token: `prefix`, 8 harmless characters, the marker, padding. Logs may show its first
    /// 8 characters (`shortenedToken`), never the marker.
    static func token(_ prefix: String = "") -> String {
        let body = prefix + "AAAAAAAA" + tokenMarker
        return body + String(repeating: "x", count: 160 - body.count)
    }

    /// A key shaped like an FCM server key: no `.` or `/`, long.
    static func sentinelKey() -> String {
        "AAAASNTLKEY:APA91b" + UUID().uuidString.replacingOccurrences(of: "-", with: "") + String(repeating: "k", count: 100)
    }

    static func plain(_ key: String) -> String {
        XMPPCredentials(username: DaemonRun.senderID, password: Secret(key)).plainInitialResponse
    }

    /// Event fields that may carry a whole token.
    static let tokenFields: Set<String> = ["to", "registration_id", "failed_registration_ids", "from", "device_registration_id", "raw"]

    /// Lines of `text` holding the key, its PLAIN form, a whole token (its marker) or the key's first 24 characters.
    static func leaks(_ text: String, keys: [String]) -> [String] {
        let needles = keys.flatMap { [$0, plain($0), String($0.prefix(24))] } + [tokenMarker]
        return text.split(separator: "\n").filter { line in needles.contains { line.contains($0) } }.map { String($0.prefix(300)) }
    }

    /// Events holding the key, or a whole token outside `tokenFields` (a `rejected` event's `error` quotes
    /// the offending value cut to 80 characters, as documented: never a whole 160-character token).
    static func eventLeaks(_ events: [[String: JSONValue]], keys: [String]) -> [String] {
        let tokens = ["", "bad-", "canon-"].map { token($0) }
        var found: [String] = []
        for event in events {
            for (field, value) in event where !tokenFields.contains(field) {
                let text = value.serialized()
                if tokens.contains(where: { text.contains($0) }) || keys.contains(where: { text.contains($0) || text.contains(plain($0)) }) {
                    found.append("\(event["event"]?.stringValue ?? "?").\(field): \(text.prefix(200))")
                }
            }
            for field in tokenFields {
                if let text = event[field]?.serialized(), keys.contains(where: { text.contains($0) }) {
                    found.append("\(event["event"]?.stringValue ?? "?").\(field) holds the key")
                }
            }
        }
        return found
    }

    // MARK: Configuration errors

    /// The key pasted into the wrong setting or flag, a token in another: the error names the setting and
    /// the rule, and echoes neither.
    @Test func configurationErrorsNeverEchoTheKeyOrAToken() throws {
        let key = Self.sentinelKey(), token = Self.token()
        let directory = NSTemporaryDirectory() + "ccsd-hygiene-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configs: [(String, String)] = [
            ("primary_endpoint", #"{"sender_id":"1","primary_endpoint":"\#(key)"}"#),
            ("server_key_file", #"{"sender_id":"1","server_key_file":"\#(key)"}"#),
            ("log_level", #"{"sender_id":"1","log_level":"\#(key)"}"#),
            ("store", #"{"sender_id":"1","store":"\#(token)"}"#),
            ("sender_id", #"{"sender_id":"\#(key)"}"#),
            ("jid_domain", #"{"sender_id":"1","jid_domain":"\#(key) "}"#),
            ("unknown key", #"{"sender_id":"1","\#(key)":1}"#),
            ("connections", #"{"sender_id":"1","connections":"\#(token)"}"#),
        ]
        var runs: [(String, [String], [String: String])] = configs.enumerated().map { index, config in
            let path = directory + "/c\(index).json"
            _ = FileManager.default.createFile(atPath: path, contents: Data(config.1.utf8))
            // server_key_file is read only without CCSD_SERVER_KEY.
            return (config.0, ["run", "--config", path], config.0 == "server_key_file" ? [:] : ["CCSD_SERVER_KEY": key])
        }
        runs += [
            ("--endpoint", ["run", "--sender-id", "1", "--endpoint", key], ["CCSD_SERVER_KEY": key]),
            ("--connections", ["run", "--sender-id", "1", "--connections", key], ["CCSD_SERVER_KEY": key]),
            ("--log-level", ["run", "--sender-id", "1", "--log-level", token], ["CCSD_SERVER_KEY": key]),
            ("--server-key-file", ["run", "--sender-id", "1", "--server-key-file", key], [:]),
            ("unknown flag", ["run", "--sender-id", "1", key], ["CCSD_SERVER_KEY": key]),
        ]
        for (name, arguments, environment) in runs {
            let result = try CommandLineTests.runProcess(CommandLineTests.binDirectory.appendingPathComponent("ccsd"),
                                                         arguments, environment: environment)
            #expect(result.status == 2, "\(name): exit \(result.status)")
            #expect(result.stderr.contains("configuration error") || result.stderr.contains("ccsd:"), "\(name): \(result.stderr)")
            let leaks = Self.leaks(result.stderr + result.stdout, keys: [key])
            #expect(leaks.isEmpty, "\(name) leaks: \(leaks)")
        }
    }

    // MARK: Runtime paths, every log format

    /// Logged in at debug level: rejected lines and nacks with sentinel tokens, unreadable upstream, a stream
    /// error whose text carries the key and a token; then a wrong key whose SASL failure echoes it and the
    /// PLAIN response; then a server certificate nobody trusts. Neither the log nor the events leak.
    @Test(arguments: Logger.Format.allCases)
    func runtimePathsNeverLogTheKeyOrAWholeToken(format: Logger.Format) async throws {
        let directory = NSTemporaryDirectory() + "ccsd-hygiene-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logs: [String] = []
        var keys: [String] = []

        // 1. Logged in, traffic and faults.
        let logPath = directory + "/run.log"
        let run = try DaemonRun(exitWhenDone: false, logPath: logPath, logLevel: .debug, logFormat: format,
                                emulator: { $0.poisonUpstream = true; $0.receipts = true })
        keys.append(run.serverKey)
        run.send([
            #"{"message_id":"h-ok","to":"\#(Self.token())","data":{"k":"v"},"delivery_receipt_requested":true}"#,
            #"{"message_id":"h-bad","to":"\#(Self.token("bad-"))","data":{"k":"v"}}"#,
            #"{"message_id":"h-canon","to":"\#(Self.token("canon-"))","data":{"k":"v"}}"#,
            #"{"message_id":"h-rejected","to":"\#(Self.token()) x","data":{"k":"v"}}"#,
            #"{"message_id":"h-regids","registration_ids":"\#(Self.token())"}"#,
            #"{"message":{"token":"/\#(Self.token())"}}"#,
        ])
        await waitUntil("every line answered", timeout: 30) {
            run.events("rejected").count == 3 && run.finalCounts.keys.count == 3
        }
        _ = try? run.emulator.sendUpstream(count: 1)
        await waitUntil("upstream handed over") { !run.events("upstream").isEmpty }
        _ = try? run.emulator.sendStreamError(condition: "undefined-condition",
                                               text: "bad key \(run.serverKey) for \(Self.token()) in \(Self.plain(run.serverKey))")
        await waitUntil("the stream error logged", timeout: 15) {
            ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").contains("undefined-condition")
        }
        let runEvents = run.events
        run.stop()
        await waitUntil("stopped", timeout: 20) { run.exited != nil }
        run.cleanUp()
        let runLog = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        logs.append(runLog)
        #expect(run.events("rejected").isEmpty == false || runEvents.contains { $0["event"] == .string("rejected") })
        #expect(runLog.contains("bad-AAAA") && runLog.contains("<redacted>"), "the paths under test were not taken:\n\(runLog)")
        #expect(Self.eventLeaks(runEvents, keys: keys).isEmpty, "event leaks: \(Self.eventLeaks(runEvents, keys: keys))")

        // 2. A wrong key, echoed by the server with the whole PLAIN response.
        let wrongLog = directory + "/wrong.log"
        let wrongKey = Self.sentinelKey()
        let wrong = try DaemonRun(key: wrongKey, exitWhenDone: false, logPath: wrongLog, logLevel: .debug, logFormat: format, store: .memory,
                                  emulator: { $0.negotiationFaults.saslFailureEchoesCredentials = true })
        keys += [wrong.serverKey, wrongKey]
        await waitUntil("authentication failed", timeout: 30) { wrong.exited != nil }
        #expect(wrong.exited == 3)
        wrong.stop()
        wrong.cleanUp()
        logs.append((try? String(contentsOfFile: wrongLog, encoding: .utf8)) ?? "")

        // 3. A server certificate that the system CA store does not trust: TLS errors.
        let tlsLog = directory + "/tls.log"
        let tls = try DaemonRun(exitWhenDone: false, logPath: tlsLog, logLevel: .debug, logFormat: format, store: .memory, daemon: { $0.caFile = nil })
        keys.append(tls.serverKey)
        await waitUntil("a TLS error logged", timeout: 20) {
            ((try? String(contentsOfFile: tlsLog, encoding: .utf8)) ?? "").lowercased().contains("certificate")
        }
        tls.stop()
        await waitUntil("stopped", timeout: 20) { tls.exited != nil }
        tls.cleanUp()
        logs.append((try? String(contentsOfFile: tlsLog, encoding: .utf8)) ?? "")

        for (name, log) in zip(["logged-in run", "wrong key", "untrusted certificate"], logs) {
            #expect(!log.isEmpty, "\(name): nothing logged")
            let leaks = Self.leaks(log, keys: keys)
            #expect(leaks.isEmpty, "\(format) \(name) log leaks:\n\(leaks.joined(separator: "\n"))")
        }
    }

    // MARK: Reload refusals (the built binary, SIGHUP)

    /// A reload whose file has the key pasted into `primary_endpoint`, then one that changes `jid_domain` to
    /// the key, then one with a new key in `sender_id`: each refused naming the field, none echoing a key.
    @Test func reloadRefusalsNeverEchoTheKey() async throws {
        let directory = NSTemporaryDirectory() + "ccsd-hygiene-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = Self.sentinelKey(), newKey = Self.sentinelKey()
        try Data(key.utf8).write(to: URL(fileURLWithPath: directory + "/server-key"))
        let emulator = CCSEmulator(configuration: EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: DaemonRun.senderID, serverKey: key, caDirectory: directory))
        let ports = try emulator.start()
        defer { emulator.stop() }
        let configPath = directory + "/ccsd.json"
        /// The file with `overrides` (key → string value) over the working settings.
        func writeConfig(_ overrides: [String: String] = [:]) throws {
            var settings = ["sender_id": DaemonRun.senderID, "primary_endpoint": "localhost:\(ports[0])",
                            "ca_file": "\(directory)/ca.pem", "server_key_file": "\(directory)/server-key",
                            "store": "memory", "log_level": "debug"]
            settings.merge(overrides) { $1 }
            let fields = settings.map { #""\#($0.key)": "\#($0.value)""# } + [#""secondary_endpoint": null"#]
            try Data(("{" + fields.joined(separator: ", ") + "}").utf8).write(to: URL(fileURLWithPath: configPath))
        }
        try writeConfig()
        let process = Process()
        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["run", "--config", configPath, "--input", "-", "--events", directory + "/events.jsonl"]
        process.environment = [:]
        let input = Pipe()
        process.standardInput = input
        let logPath = directory + "/ccsd.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        func refusals() -> Int { log().components(separatedBy: "configuration reload refused").count - 1 }

        guard await waitUntil("the login", { emulator.stats().authenticated == 1 }) else { return }
        let reloads = [("primary_endpoint", key), ("jid_domain", key), ("sender_id", newKey)]
        for (index, (field, value)) in reloads.enumerated() {
            // The last reload also rotates the key file to the new key (refused with the rest).
            if index == 2 { try Data(newKey.utf8).write(to: URL(fileURLWithPath: directory + "/server-key")) }
            try writeConfig([field: value])
            kill(process.processIdentifier, SIGHUP)
            guard await waitUntil("refusal \(index + 1)", { refusals() == index + 1 }) else { return }
            #expect(log().contains(field), "the refusal names \(field):\n\(log())")
        }
        kill(process.processIdentifier, SIGTERM)
        guard await waitUntil("the stop", { !process.isRunning }) else { return }
        let leaks = Self.leaks(log(), keys: [key, newKey])
        #expect(leaks.isEmpty, "reload log leaks:\n\(leaks.joined(separator: "\n"))")
    }
}

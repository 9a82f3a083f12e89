import CCS
import Foundation
import TLS
import Testing
import XMLStream
import XMPP

/// ccsd against a second real XMPP server: ejabberd on 127.0.0.1 with direct TLS, started once for the
/// test run by `scripts/test` (scripts/ejabberd-test-server), which exports CCSD_EJABBERD_*. With
/// CCSD_REQUIRE_EJABBERD=1 (as the test command sets) a missing server fails the tests instead of skipping
/// them. ejabberd offers SCRAM and PLAIN, pings every client after 1 s of silence and kills one that does
/// not answer within 2 s (mod_ping), and lets the limited account hold 2 sessions (max_user_sessions),
/// ending the oldest with a `conflict` stream error when a third logs in. Serialized: the tests share the
/// accounts, and one restarts the server.
@Suite(.serialized) struct EjabberdInteropTests {
    struct Server {
        var port: Int
        var caFile: String
        var ctl: String
        var restart: String
        var user: String
        var limitedUser: String
        var password: String
        var domain: String
    }

    static var server: Server? {
        let env = ProcessInfo.processInfo.environment
        guard let port = env["CCSD_EJABBERD_PORT"].flatMap(Int.init), let ca = env["CCSD_EJABBERD_CA"],
              let ctl = env["CCSD_EJABBERD_CTL"], let restart = env["CCSD_EJABBERD_RESTART"],
              let user = env["CCSD_EJABBERD_USER"], let limited = env["CCSD_EJABBERD_LIMITED_USER"],
              let password = env["CCSD_EJABBERD_PASSWORD"], let domain = env["CCSD_EJABBERD_DOMAIN"] else { return nil }
        return Server(port: port, caFile: ca, ctl: ctl, restart: restart, user: user, limitedUser: limited,
                      password: password, domain: domain)
    }

    static var enabled: Bool {
        server != nil || ProcessInfo.processInfo.environment["CCSD_REQUIRE_EJABBERD"] == "1"
    }

    static func requireServer() throws -> Server {
        try #require(server, "ejabberd is not running: run scripts/test, which starts it")
    }

    /// Runs one of the server's helper scripts (ejabberdctl, restart) and waits at most `timeout` seconds.
    static func runScript(_ path: String, _ arguments: [String], timeout: Double = 90) throws -> Int32? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process.exitStatus(waitingAtMost: timeout)
    }

    /// The built `ccsd` against ejabberd, as a child process with its own directory, stopped by its PID.
    final class CCSD {
        let directory: String
        let eventsPath: String
        let logPath: String
        private let process = Process()

        init(_ server: Server, user: String, password: String, settings: [String: Any]) throws {
            directory = NSTemporaryDirectory() + "ccsd-ejabberd-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            eventsPath = directory + "/events.jsonl"
            logPath = directory + "/stderr.log"
            var configuration: [String: Any] = [
                "sender_id": user, "jid_domain": server.domain, "primary_endpoint": "localhost:\(server.port)",
                "secondary_endpoint": NSNull(), "ca_file": server.caFile, "store": "memory",
                "shutdown_grace_seconds": 1, "close_timeout_seconds": 1,
            ]
            configuration.merge(settings) { _, new in new }
            let configPath = directory + "/ccsd.json"
            try JSONSerialization.data(withJSONObject: configuration).write(to: URL(fileURLWithPath: configPath))
            let keyPath = directory + "/server-key"
            try Data(password.utf8).write(to: URL(fileURLWithPath: keyPath))
            process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
            process.arguments = ["run", "--config", configPath, "--server-key-file", keyPath, "--input", "/dev/null",
                                 "--events", eventsPath, "--state-dir", directory + "/state"]
            process.environment = [:]
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: logPath)
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        var events: [[String: JSONValue]] {
            ((try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONValue.parse(String($0)).objectValue }
        }
        /// The `connection` events in `state`, as (connection id, seconds since 1970).
        func connections(_ state: String) -> [(id: Int, at: Double)] {
            events.filter { $0["event"] == .string("connection") && $0["state"] == .string(state) }.compactMap { event in
                guard let id = event["id"]?.intValue, let time = event["time"]?.stringValue,
                      let date = Self.timeFormat.date(from: time) else { return nil }
                return (Int(id), date.timeIntervalSince1970)
            }
        }
        nonisolated(unsafe) static let timeFormat: ISO8601DateFormatter = {
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return format
        }()

        var isRunning: Bool { process.isRunning }
        func waitForExit(timeout: Double) -> Int32? { process.exitStatus(waitingAtMost: timeout) }
        /// SIGTERM by PID; the exit status (nil when it had to be killed).
        @discardableResult
        func stop(timeout: Double = 15) -> Int32? {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            return waitForExit(timeout: timeout)
        }

        func cleanUp() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL); _ = waitForExit(timeout: 5) }
            killLeftoverProcesses(matching: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    final class Recorder: XMPPClientDelegate {
        var jid: String?
        var ended: XMPPError?
        func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) { self.jid = jid }
        func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) {}
        func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) { ended = error }
    }

    /// Login over direct TLS: ejabberd offers SCRAM-SHA-1 and PLAIN, ccsd takes PLAIN, binds and skips the
    /// optional session. Then ejabberd pings it every second of silence and would kill the session after
    /// 2 s without an answer: ccsd answers, so the session outlives several pings. Then a clean close.
    @Test(.enabled(if: enabled)) func logsInWithPlainAndAnswersTheServersPings() async throws {
        let server = try Self.requireServer()
        let loop = EventLoop(label: "ejabberd-interop")
        let recorder = Recorder()
        let client = loop.submitAndWait {
            let configuration = XMPPClientConfiguration(
                host: "localhost", port: server.port,
                credentials: XMPPCredentials(username: server.user, password: Secret(server.password),
                                             jidDomain: server.domain, resource: "ccsd-interop"),
                tls: TLSClientConfiguration(caFile: server.caFile), keepaliveInterval: 60, deadPeerTimeout: 120)
            let client = XMPPClient(configuration: configuration, on: loop, delegate: recorder)
            client.start()
            return LoopBound(client, eventLoop: loop)
        }
        await waitUntil("login", timeout: 15) { loop.submitAndWait { recorder.jid != nil || recorder.ended != nil } }
        let jid = loop.submitAndWait { recorder.jid }
        #expect(jid == "\(server.user)@\(server.domain)/ccsd-interop",
                "login failed: \(String(describing: loop.submitAndWait { recorder.ended }))")
        guard jid != nil else { return }
        // Five pings from ejabberd (one per second of silence; ccsd itself sends nothing for 60 s).
        try await Task.sleep(for: .seconds(5))
        #expect(loop.submitAndWait { recorder.ended } == nil, "ejabberd ended the session: its pings went unanswered?")
        loop.submitAndWait { client.value.close() }
        await waitUntil("clean close", timeout: 10) { loop.submitAndWait { recorder.ended != nil } }
        #expect(loop.submitAndWait { recorder.ended?.kind } == .closedLocally)
    }

    /// A wrong server key: ejabberd answers `not-authorized`, ccsd exits 3 at once without retrying, and
    /// its log does not carry the key.
    @Test(.enabled(if: enabled)) func aWrongPasswordExitsThree() async throws {
        let server = try Self.requireServer()
        let ccsd = try CCSD(server, user: server.user, password: "wrong-interop-key", settings: [:])
        defer { ccsd.cleanUp() }
        let status = ccsd.waitForExit(timeout: 30)
        #expect(status == 3, "exit status \(String(describing: status)); log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("not-authorized"))
        #expect(!ccsd.log.contains("wrong-interop-key"))
        #expect(ccsd.connections("connected").isEmpty)
    }

    /// ejabberdctl kick_user ends ccsd's session; ccsd logs in again by itself.
    @Test(.enabled(if: enabled)) func aKickedSessionLogsInAgain() async throws {
        let server = try Self.requireServer()
        let ccsd = try CCSD(server, user: server.user, password: server.password,
                            settings: ["reconnect_initial_seconds": 0.5, "reconnect_max_seconds": 2])
        defer { ccsd.cleanUp() }
        await waitUntil("logged in", timeout: 20) { ccsd.connections("connected").count >= 1 }
        #expect(try Self.runScript(server.ctl, ["kick_user", server.user, server.domain]) == 0)
        await waitUntil("the kick ended the session", timeout: 20) { ccsd.connections("closed").count >= 1 }
        await waitUntil("logged in again", timeout: 20) { ccsd.connections("connected").count >= 2 }
        #expect(ccsd.connections("connected").count == 2, "log:\n\(ccsd.log)")
        #expect(ccsd.stop() == 0)
    }

    /// ejabberd stopped by its PID and started again (seconds of refused connections): ccsd's attempts while
    /// it is down stay within its backoff (no storm), and it logs in again once ejabberd is back.
    @Test(.enabled(if: enabled)) func aRestartOfTheServerIsRiddenOutWithBackoff() async throws {
        let server = try Self.requireServer()
        let backoff = Backoff(base: 0.2, cap: 1.6)
        let ccsd = try CCSD(server, user: server.user, password: server.password,
                            settings: ["reconnect_initial_seconds": backoff.base, "reconnect_max_seconds": backoff.cap])
        defer { ccsd.cleanUp() }
        await waitUntil("logged in", timeout: 20) { ccsd.connections("connected").count >= 1 }
        let started = Date()
        #expect(try Self.runScript(server.restart, []) == 0, "ejabberd did not restart")
        await waitUntil("logged in again", timeout: 30) { ccsd.connections("connected").count >= 2 }
        let elapsed = Date().timeIntervalSince(started)
        let attempts = ccsd.connections("reconnecting").count
        let bound = ReconnectStormTests.maxAttempts(in: elapsed, backoff: backoff)
        #expect(attempts >= 1)
        #expect(attempts <= bound, "\(attempts) attempts in \(elapsed) s of restart; the backoff allows \(bound)")
        #expect(ccsd.stop() == 0)
    }

    /// Three connections on an account limited to two sessions: each login beyond the limit makes ejabberd
    /// end the oldest session with `conflict`. Every such drop waits its backoff: no reconnect follows a
    /// login at once (before the fix each replaced healthy connection reconnected at once and replaced the
    /// next one, in chains through the pool), and the logins stay within what the backoff allows.
    @Test(.enabled(if: enabled)) func oneConnectionPastTheSessionLimitBacksOff() async throws {
        let server = try Self.requireServer()
        let ccsd = try CCSD(server, user: server.limitedUser, password: server.password,
                            settings: ["connections": 3, "healthy_connection_seconds": 0.3,
                                       "reconnect_initial_seconds": 1, "reconnect_max_seconds": 4])
        defer { ccsd.cleanUp() }
        await waitUntil("the limit replaced a session", timeout: 20) { ccsd.log.contains("(conflict)") }
        let started = Date()
        try await Task.sleep(for: .seconds(8))
        let elapsed = Date().timeIntervalSince(started) + 2  // the first logins came up to ~2 s before
        #expect(ccsd.stop() == 0)
        let logins = ccsd.connections("connected").map(\.at).sorted()
        let attempts = ccsd.connections("reconnecting").map(\.at).sorted()
        // A reconnect within 0.1 s of a login is one that login's replacement triggered at once.
        let chained = attempts.filter { attempt in logins.contains { $0 <= attempt && attempt - $0 < 0.1 } }
        #expect(chained.count <= 1, "\(chained.count) reconnects right after a login; events:\n\(ccsd.events)")
        let bound = 3 * ReconnectStormTests.maxAttempts(in: elapsed, backoff: Backoff(base: 1, cap: 4))
        #expect(logins.count <= bound, "\(logins.count) logins in \(elapsed) s; the backoff allows \(bound)")
        #expect(logins.count >= 4, "the pool did not come back after the replacements")
    }
}

import CCS
import Foundation
import Testing
import XMPP
@testable import Daemon

/// Configuration file, flags and the server key: every unknown or invalid key is a clear error.
@Suite struct ConfigurationTests {
    func load(_ json: String) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        try configuration.apply(fileContents: Data(json.utf8), path: "test.json")
        return configuration
    }

    @Test func shippedConfigFilesAreValid() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for name in ["ccsd.json", "emulator.json"] {
            let data = try #require(FileManager.default.contents(atPath: root.appendingPathComponent("config/\(name)").path))
            var configuration = Configuration()
            try configuration.apply(fileContents: data, path: name)
            #expect(configuration.senderID == "123456789012")
        }
    }

    @Test func fileValuesApply() throws {
        let c = try load(#"{"sender_id":"42","primary_endpoint":"h:5235","secondary_endpoint":"h:5236","connections":4,"window":50,"max_attempts":3,"retry_initial_seconds":0.5,"ca_file":"/x.pem","jid_domain":"fcm.googleapis.com","ack_timeout_seconds":15}"#)
        #expect(c.senderID == "42")
        #expect(c.endpoints == [Endpoint(host: "h", port: 5235), Endpoint(host: "h", port: 5236)])
        #expect(c.connections == 4)
        #expect(c.window == 50)
        #expect(c.retryBackoff.base == 0.5)
        #expect(c.caFile == "/x.pem")
        #expect(c.jidDomain == "fcm.googleapis.com")
        #expect(c.dispatcherConfiguration.maxAttempts == 3)
        #expect(c.dispatcherConfiguration.ackTimeout == 15)
    }

    @Test func storeAndLifecycleKeysApply() throws {
        let c = try load(#"{"state_dir":"/srv/ccsd","store":"memory","store_synchronous":"normal","final_retention_seconds":3600,"events_retention_seconds":86400,"shutdown_grace_seconds":20,"close_timeout_seconds":5,"failure_close_timeout_seconds":0.5}"#)
        #expect(c.stateDirectory == "/srv/ccsd")
        #expect(c.store == .memory)
        #expect(c.storeSynchronous == .normal)
        #expect(c.finalRetentionSeconds == 3600)
        #expect(c.eventsRetentionSeconds == 86400)
        #expect(c.lifecycleConfiguration(exitWhenDone: true) == DaemonLifecycle.Configuration(
            shutdownGrace: .seconds(20), closeTimeout: .seconds(5), failureCloseTimeout: .milliseconds(500),
            exitWhenDone: true, durability: .memory))
    }

    @Test func storeDefaultsAreDurable() {
        let c = Configuration()
        #expect(c.store == .sqlite)
        #expect(c.storeSynchronous == .full)
        #expect(c.finalRetentionSeconds == 86_400)
        #expect(c.eventsRetentionSeconds == 7 * 86_400)
        #expect(c.lifecycleConfiguration(exitWhenDone: false) == DaemonLifecycle.Configuration(
            shutdownGrace: .seconds(10), closeTimeout: .seconds(3), failureCloseTimeout: .seconds(1),
            exitWhenDone: false, durability: .durable))
    }

    @Test(arguments: [
        ([:], "/var/lib/ccsd"),
        (["STATE_DIRECTORY": "/var/lib/ccsd"], "/var/lib/ccsd"),
        (["STATE_DIRECTORY": "/var/lib/private/ccsd"], "/var/lib/private/ccsd"),
        (["STATE_DIRECTORY": "/var/lib/a:/var/lib/b"], "/var/lib/a"),
        (["STATE_DIRECTORY": ""], "/var/lib/ccsd"),
    ])
    func stateDirectoryDefaultsToSystemdsThenVarLib(environment: [String: String], expected: String) {
        #expect(Configuration.defaultStateDirectory(environment: environment) == expected)
    }

    @Test func defaultsAreCCS() {
        let c = Configuration()
        #expect(c.jidDomain == "gcm.googleapis.com")
        #expect(c.endpoints.map(\.port) == [5235, 5236])
        #expect(c.window == 100)
    }

    @Test(arguments: [
        (#"{"time_to_life":1}"#, "time_to_life", "unknown key"),
        (#"{"conections":2}"#, "conections", "unknown key (did you mean connections?)"),
        (#"{"window":101}"#, "window", "must be an integer from 1 to 100, got 101"),
        (#"{"window":0}"#, "window", "must be an integer from 1 to 100, got 0"),
        (#"{"window":"100"}"#, "window", "must be an integer from 1 to 100, got \"100\""),
        (#"{"connections":1001}"#, "connections", "must be an integer from 1 to 1000, got 1001"),
        (#"{"primary_endpoint":"nohost"}"#, "primary_endpoint", "must be \"HOST:PORT\" with a port from 1 to 65535, got \"nohost\""),
        (#"{"primary_endpoint":"h:99999"}"#, "primary_endpoint", "must be \"HOST:PORT\" with a port from 1 to 65535, got \"h:99999\""),
        (#"{"sender_id":"abc"}"#, "sender_id", "must be the numeric sender ID (project number), got 3 characters that are not all digits"),
        (#"{"keepalive_seconds":100,"dead_peer_seconds":90}"#, "dead_peer_seconds", "must be greater than keepalive_seconds (100), got 90"),
        (#"{"keepalive_seconds":2.5,"dead_peer_seconds":2.5}"#, "dead_peer_seconds", "must be greater than keepalive_seconds (2.5), got 2.5"),
        (#"{"retry_initial_seconds":10,"retry_max_seconds":5}"#, "retry_max_seconds", "must be at least retry_initial_seconds (10), got 5"),
        (#"{"retry_initial_seconds":-1}"#, "retry_initial_seconds", "must be a number of seconds above 0, got -1"),
        (#"{"store":"redis"}"#, "store", "must be \"sqlite\" or \"memory\", got \"redis\""),
        (#"{"store":1}"#, "store", "must be \"sqlite\" or \"memory\", got 1"),
        (#"{"store_synchronous":"off"}"#, "store_synchronous", "must be \"full\" or \"normal\", got \"off\""),
        (#"{"state_dir":""}"#, "state_dir", "must be a non-empty string, got \"\""),
        (#"{"final_retention_seconds":0}"#, "final_retention_seconds", "must be a number of seconds above 0, got 0"),
        (#"{"events_retention_seconds":"7d"}"#, "events_retention_seconds", "must be a number of seconds above 0, got \"7d\""),
        (#"{"close_timeout_seconds":-3}"#, "close_timeout_seconds", "must be a number of seconds above 0, got -3"),
        (#"{"state-dir":"/x"}"#, "state-dir", "unknown key (did you mean state_dir?)"),
        (#"[1]"#, "test.json", "the file must hold one JSON object"),
        (#"{"#, "test.json", "not valid JSON: the text ends at byte 1, before its JSON value is complete (line 1, column 2)"),
        ("{\n  \"window\": 5,\n  \"connections\": ", "test.json",
         "not valid JSON: the text ends at byte 34, before its JSON value is complete (line 3, column 18)"),
        ("{\n  \"window\": 5,\n  \"connections\": x}", "test.json", "not valid JSON: invalid token at byte 34 (line 3, column 18)"),
        // RFC 8259 has no trailing commas (Foundation, which ccsd once parsed with, took them).
        (#"{"sender_id":"123","connections":2,}"#, "test.json", "not valid JSON: a trailing comma at byte 34 (line 1, column 35)"),
        ("{\"window\":5,\n\"state_dir\":[\"a\",\n]}", "test.json", "not valid JSON: a trailing comma at byte 29 (line 2, column 17)"),
        // Past a number no Double holds (set aside to name its key) and past one ccsd reads, the place is true.
        (#"{"sender_id": "123456789012", "connections": 1e400, "k": tru}"#, "test.json", "not valid JSON: invalid token at byte 57 (line 1, column 58)"),
        (#"{"window": 1\#(String(repeating: "0", count: 400)), "k": tru}"#, "test.json", "not valid JSON: invalid token at byte 419 (line 1, column 420)"),
        // Numbers are quoted as written.
        (#"{"max_attempts":3.0}"#, "max_attempts", "must be an integer from 1 to 100, got 3.0"),
        (#"{"window":1E1}"#, "window", "must be an integer from 1 to 100, got 1E1"),
        (#"{"window":1e400}"#, "window", "must be an integer from 1 to 100, got 1e400"),
        (#"{"window":-1e400}"#, "window", "must be an integer from 1 to 100, got -1e400"),
        (#"{"keepalive_seconds":1e400}"#, "keepalive_seconds", "must be a number of seconds above 0, got 1e400"),
        (#"{"window":123456789012345678901234567890}"#, "window", "must be an integer from 1 to 100, got 123456789012345678901234567890"),
    ])
    func invalidFilesNameTheKeyAndRule(json: String, field: String, rule: String) {
        #expect(throws: ConfigurationError(field: field, rule: rule)) { try load(json) }
    }

    /// A number no Double holds no longer hides the file's other problems behind one file-level line.
    @Test func unrepresentableNumberIsNamedWithEveryOtherProblem() {
        var configuration = Configuration()
        let problems = configuration.problems(applyingFileContents: Data(#"{"window":1e400,"conections":2,"max_attempts":0,"keepalive_seconds":100,"dead_peer_seconds":90}"#.utf8), path: "test.json")
        #expect(problems == [
            ConfigurationError(field: "conections", rule: "unknown key (did you mean connections?)"),
            ConfigurationError(field: "max_attempts", rule: "must be an integer from 1 to 100, got 0"),
            ConfigurationError(field: "window", rule: "must be an integer from 1 to 100, got 1e400"),
            ConfigurationError(field: "dead_peer_seconds", rule: "must be greater than keepalive_seconds (100), got 90"),
        ])
        #expect(configuration.window != 0)
    }

    @Test func serverKeyComesFromFlagFileThenEnvironmentThenConfigFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let flagFile = directory.appendingPathComponent("flag").path
        let configFile = directory.appendingPathComponent("config").path
        try "flag-key\n".write(toFile: flagFile, atomically: true, encoding: .utf8)
        try "config-key".write(toFile: configFile, atomically: true, encoding: .utf8)
        var c = Configuration()
        c.serverKeyFile = configFile
        try c.loadServerKey(flagFile: flagFile, environment: ["CCSD_SERVER_KEY": "env-key"])
        #expect(c.serverKey.revealed == "flag-key")
        try c.loadServerKey(flagFile: nil, environment: ["CCSD_SERVER_KEY": "env-key"])
        #expect(c.serverKey.revealed == "env-key")
        try c.loadServerKey(flagFile: nil, environment: [:])
        #expect(c.serverKey.revealed == "config-key")
        #expect(throws: ConfigurationError(field: "server_key_file", rule: "cannot read /nonexistent/key: No such file or directory")) {
            try c.loadServerKey(flagFile: "/nonexistent/key", environment: [:])
        }
    }

    @Test func serverKeyNeverPrints() throws {
        var c = Configuration()
        c.senderID = "42"
        c.serverKey = Secret("AAAA-super-secret")
        #expect(!"\(c)".contains("super-secret"))
        #expect(!String(reflecting: c).contains("super-secret"))
        #expect(!"\(c.serverKey)".contains("super-secret"))
    }

    @Test func runNeedsSenderAndKey() {
        var c = Configuration()
        // Both missing: both named, in one error.
        var both = ConfigurationError(field: "sender_id", rule: "required (config file or --sender-id)")
        both.further = [ConfigurationError(field: "server_key", rule: "required: set server_key_file, --server-key-file, or CCSD_SERVER_KEY")]
        #expect(throws: both) { try c.validateForRun() }
        c.senderID = "42"
        #expect(throws: ConfigurationError(field: "server_key", rule: "required: set server_key_file, --server-key-file, or CCSD_SERVER_KEY")) { try c.validateForRun() }
    }
}

@Suite struct RunOptionsTests {
    @Test func flagsParseAndOverrideTheFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-opt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("c.json").path
        try #"{"sender_id":"1","connections":2,"primary_endpoint":"a:1"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let options = try RunOptions.parse(["--config", config, "--endpoint", "h:5235", "--endpoint", "[::1]:5236",
                                            "--sender-id", "77", "--connections", "3", "--input", "in", "--events", "out", "--exit-when-done"])
        #expect(options.exitWhenDone)
        let c = try options.configuration(environment: ["CCSD_SERVER_KEY": "k"])
        #expect(c.senderID == "77")
        #expect(c.connections == 3)
        #expect(c.endpoints == [Endpoint(host: "h", port: 5235), Endpoint(host: "::1", port: 5236)])
        #expect(c.serverKey.revealed == "k")
    }

    @Test func stateDirectoryIsTheFlagThenTheFileThenTheEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-opt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("c.json").path
        try #"{"sender_id":"1","state_dir":"/from/file"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let environment = ["CCSD_SERVER_KEY": "k", "STATE_DIRECTORY": "/from/systemd"]
        #expect(try RunOptions.parse(["--config", config, "--state-dir", "/from/flag"]).configuration(environment: environment).stateDirectory == "/from/flag")
        #expect(try RunOptions.parse(["--config", config]).configuration(environment: environment).stateDirectory == "/from/file")
        #expect(try RunOptions.parse(["--sender-id", "1"]).configuration(environment: environment).stateDirectory == "/from/systemd")
        #expect(try RunOptions.parse(["--sender-id", "1"]).configuration(environment: ["CCSD_SERVER_KEY": "k"]).stateDirectory == "/var/lib/ccsd")
    }

    @Test func storeFlagOverridesTheFile() throws {
        let options = try RunOptions.parse(["--sender-id", "1", "--store", "memory"])
        #expect(options.store == .memory)
        let c = try options.configuration(environment: ["CCSD_SERVER_KEY": "k"])
        #expect(c.store == .memory)
        #expect(c.lifecycleConfiguration(exitWhenDone: false).durability == .memory)
        #expect(try RunOptions.parse(["--sender-id", "1"]).configuration(environment: ["CCSD_SERVER_KEY": "k"]).store == .sqlite)
    }

    @Test func usageNamesTheStoreFlagsAndExitCodes() {
        for text in ["--state-dir DIR", "--store sqlite|memory", "$STATE_DIRECTORY", "5 the store failed"] {
            #expect(RunOptions.usage.contains(text), "usage lacks \(text)")
        }
    }

    @Test func helpIsAnOptionNotAnError() throws {
        #expect(try RunOptions.parse(["--help"]).help)
        #expect(try RunOptions.parse(["-h"]).help)
        #expect(CCSDCommand.main(["run", "--help"]) == 0)
    }

    @Test func unreadableFilesSayWhy() {
        #expect(throws: ConfigurationError(field: "--config", rule: "cannot read /nonexistent/c.json: No such file or directory")) {
            try RunOptions.parse(["--config", "/nonexistent/c.json"]).configuration(environment: [:])
        }
    }

    @Test(arguments: [
        (["--endpoint", "nope"], "--endpoint", "must be HOST:PORT with a port from 1 to 65535, got \"nope\""),
        (["--connections", "0"], "--connections", "must be an integer from 1 to 1000, got \"0\""),
        (["--conections", "2"], "--conections", "unknown option (did you mean --connections?)"),
        (["--input"], "--input", "needs a value"),
        (["--log-level", "loud"], "--log-level", "must be one of debug, info, warning, error, got \"loud\""),
        (["--store", "sqlite3"], "--store", "must be one of sqlite, memory, got \"sqlite3\""),
        (["--store"], "--store", "needs a value"),
        (["--state-dir", ""], "--state-dir", "needs a value"),
        (["--state_dir", "/x"], "--state_dir", "unknown option (did you mean --state-dir?)"),
    ])
    func badFlagsNameTheFlag(arguments: [String], field: String, rule: String) {
        #expect(throws: ConfigurationError(field: field, rule: rule)) { try RunOptions.parse(arguments) }
    }
}

import CCS
import Daemon
import Foundation
import Testing
@testable import Service

/// `ccsd events`, `ccsd status` and `ccsd check-config` without sockets.
@Suite struct ClientCommandsTests {
    @Test func eventsFlagsAndRequestTarget() throws {
        let options = try EventsCommand.Options.parse(["--after", "41", "--follow", "--ack", "--limit", "10", "--poll-seconds", "5"])
        #expect(options.after == 41 && options.follow && options.ack && options.limit == 10 && options.pollSeconds == 5)
        #expect(options.path(after: 41, wait: 5) == "/v1/events?after=41&limit=10&wait=5")
        #expect(options.path(after: nil, wait: 0) == "/v1/events?limit=10")
        #expect(throws: UsageError("--after", "must be an event seq (an integer from 0), got \"-1\"")) {
            try EventsCommand.Options.parse(["--after", "-1"])
        }
        #expect(throws: UsageError("--poll-seconds", "must be an integer from 1 to 60, got \"61\"")) {
            try EventsCommand.Options.parse(["--poll-seconds", "61"])
        }
    }

    @Test func eventsPagePrintsOneLinePerEventAndTheCursor() throws {
        let body = #"{"events":[{"event":"accepted","message_id":"m-1","seq":41,"time":"t"},{"event":"acked","message_id":"m-1","seq":42,"success":18446744073709551617,"time":"t","to":"x"}],"next":42}"#
        let page = try #require(EventsCommand.page(APIResponse(status: 200, body: Data(body.utf8))))
        #expect(page.lines == [
            #"{"event":"accepted","message_id":"m-1","seq":41,"time":"t"}"#,
            #"{"event":"acked","message_id":"m-1","seq":42,"success":18446744073709551617,"time":"t","to":"x"}"#,
        ])
        #expect(page.next == 42)
        #expect(EventsCommand.page(APIResponse(status: 400, body: Data(#"{"error":{}}"#.utf8))) == nil)
    }

    @Test func statusTableShowsConnectionsQueueAndErrors() throws {
        let status = try JSONValue.parse(#"""
            {"lifecycle":"running","store_writable":true,"queued":7,"in_flight":12,"outstanding":19,
             "connections":[{"id":1,"endpoint":"fcm-xmpp.googleapis.com:5235","state":"ready","in_flight":12,"window":100},
                            {"id":2,"endpoint":"fcm-xmpp.googleapis.com:5236","state":"draining","in_flight":0,"window":100}],
             "recent_errors":[{"time":"2026-11-30T12:00:01.000Z","connection":2,"code":"CONNECTION_DRAINING","message":"server drains"}],
             "webhook":"off","max_queued":20000,"counters":{"sent":5,"acked":4}}
            """#)
        #expect(StatusCommand.render(status) == [
            "ccsd: running, store writable",
            "connections: 2 (1 ready)",
            "  ID  ENDPOINT                      STATE     IN FLIGHT",
            "  1   fcm-xmpp.googleapis.com:5235  ready     12/100",
            "  2   fcm-xmpp.googleapis.com:5236  draining  0/100",
            "queue: 7 queued, 12 in flight, 19 not yet final, limit 20000",
            "since start: acked 4, sent 5",
            "recent errors:",
            "  2026-11-30T12:00:01.000Z  connection 2  CONNECTION_DRAINING: server drains",
            "webhook: off",
        ])
    }

    /// `recent_errors` as `ccsd serve` writes them (log entries: time, level, message, fields).
    @Test func statusShowsTheServiceLogEntries() throws {
        let status = try JSONValue.parse(#"""
            {"lifecycle":"running","connections":[],"recent_errors":[
              {"time":"2026-11-30T12:00:01.000Z","level":"warning","message":"connection failed; backing off",
               "fields":{"connection":"1","error":"connection refused"}},
              {"time":"2026-11-30T12:00:02.000Z","level":"error","message":"nacked","fields":{}}]}
            """#)
        #expect(StatusCommand.render(status) == [
            "ccsd: running",
            "connections: 0 (0 ready)",
            "recent errors:",
            "  2026-11-30T12:00:01.000Z  warning  connection failed; backing off connection=1 error=connection refused",
            "  2026-11-30T12:00:02.000Z  error  nacked",
        ])
        let none = try JSONValue.parse(#"{"lifecycle":"running","connections":[],"recent_errors":[]}"#)
        #expect(StatusCommand.render(none).last == "recent errors: none")
    }

    /// The shape docs/api.md gives for `GET /v1/status` without `recent_errors` (none claimed).
    @Test func statusOfTheDocumentedShape() throws {
        let status = try JSONValue.parse(#"""
            {"lifecycle":"running","connections":[{"id":1,"endpoint":"fcm-xmpp.googleapis.com:5235","state":"ready",
              "in_flight":3,"window":100}],"connections_ready":1,"outstanding":12,"queued":9,"in_flight":3,
              "store_writable":true,"max_queued":20000,"event_waiters":0,"counters":{"sent":7,"reconnects":0}}
            """#)
        #expect(StatusCommand.render(status) == [
            "ccsd: running, store writable",
            "connections: 1 (1 ready)",
            "  ID  ENDPOINT                      STATE  IN FLIGHT",
            "  1   fcm-xmpp.googleapis.com:5235  ready  3/100",
            "queue: 9 queued, 3 in flight, 12 not yet final, limit 20000",
            "since start: reconnects 0, sent 7",
            "event_waiters: 0",
        ])
    }

    @Test func checkConfigNamesEveryProblemNotOnlyTheFirst() {
        let text = #"""
            {"sender_id": "12ab", "connections": 0, "windw": 10, "retry_initial_seconds": 5, "retry_max_seconds": 2,
             "keepalive_seconds": 30, "dead_peer_seconds": "90", "store": "postgres"}
            """#
        let (_, problems) = CheckConfigCommand.check(fileContents: Data(text.utf8), path: "c.json")
        #expect(problems.map(\.field) == ["connections", "dead_peer_seconds", "store", "windw", "sender_id", "retry_max_seconds"])
        #expect(problems.first?.rule == "must be an integer from 1 to 1000, got 0")
        #expect(problems.contains(ConfigurationError(field: "windw", rule: "unknown key (did you mean window?)")))
        #expect(problems.contains(ConfigurationError(field: "store", rule: "must be \"sqlite\" or \"memory\", got \"postgres\"")))
        // dead_peer_seconds was invalid itself: the cross-field rule with keepalive_seconds is not claimed on top.
        #expect(problems.filter { $0.field == "dead_peer_seconds" }.count == 1)
    }

    @Test func checkConfigRequiresSenderIDAndReadableFiles() {
        let text = #"{"server_key_file": "/etc/k", "ca_file": "/etc/ca.pem"}"#
        let (_, problems) = CheckConfigCommand.check(fileContents: Data(text.utf8), path: "c.json") { path, field throws(ConfigurationError) in
            if path == "/etc/k" { return Data("\n".utf8) }
            throw ConfigurationError(field: field, rule: "cannot read \(path): Permission denied")
        }
        #expect(problems == [
            ConfigurationError(field: "sender_id", rule: "required: the numeric sender ID (project number)"),
            ConfigurationError(field: "server_key_file", rule: "/etc/k is empty"),
            ConfigurationError(field: "ca_file", rule: "cannot read /etc/ca.pem: Permission denied"),
        ])
    }

    @Test func checkConfigReportExitsTwoWithEveryProblemAndZeroWhenGood() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = directory.appendingPathComponent("bad.json").path
        try Data(#"{"sender_id":"1","connections":2000,"window":0}"#.utf8).write(to: URL(fileURLWithPath: bad))
        let captured = CapturedOutput()
        #expect(CheckConfigCommand.run([bad], output: captured.output) == 2)
        #expect(captured.out == ["\(bad): 2 problems",
                                 "  connections: must be an integer from 1 to 1000, got 2000",
                                 "  window: must be an integer from 1 to 100, got 0"])
        let good = directory.appendingPathComponent("good.json").path
        try Data(#"{"sender_id":"123","connections":2}"#.utf8).write(to: URL(fileURLWithPath: good))
        let ok = CapturedOutput()
        #expect(CheckConfigCommand.run([good], output: ok.output) == 0)
        #expect(ok.out.first == "\(good): ok")
        let missing = CapturedOutput()
        #expect(CheckConfigCommand.run([directory.appendingPathComponent("none.json").path], output: missing.output) == 2)
        #expect(missing.out.last?.hasSuffix("No such file or directory") == true)
    }

    @Test func runStillRefusesABadConfigurationNamingEveryProblem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("c.json").path
        try Data(#"{"sender_id":"1","connections":2000,"window":0}"#.utf8).write(to: URL(fileURLWithPath: path))
        let options = try RunOptions.parse(["--config", path])
        do {
            _ = try options.configuration(environment: ["CCSD_SERVER_KEY": "k"])
            Issue.record("a bad configuration was taken")
        } catch {
            #expect(error.problems.map(\.field) == ["connections", "window"])
            #expect("\(error)" == "configuration error: connections: must be an integer from 1 to 1000, got 2000\nconfiguration error: window: must be an integer from 1 to 100, got 0")
        }
    }

    @Test func everyCommandHasHelpWithExitCodes() {
        let captured = CapturedOutput()
        #expect(EventsCommand.run(["--help"], environment: [:], output: captured.output) == 0)
        #expect(StatusCommand.run(["-h"], environment: [:], output: captured.output) == 0)
        #expect(CheckConfigCommand.run(["--help"], output: captured.output) == 0)
        #expect(captured.out.count == 3)
        for text in captured.out { #expect(text.contains("exit codes: 0")) }
    }
}

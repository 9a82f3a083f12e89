import CCS
import Foundation
import Testing

/// `ccsd serve` as a process against the emulator, driven with curl over its Unix socket and TCP
/// (docs/api.md): every route, every error status, batches, message state through to its outcome, the long
/// poll and its resumption after a restart, the bearer token.
@Suite(.serialized) struct ServeAPITests {
    static let valid = #"{"to":"tok-aaaaaaaaaaaaaaaaaaaa","message_id":"MID","data":{"k":"v"}}"#
    static func message(_ id: String) -> String { valid.replacingOccurrences(of: "MID", with: id) }

    @Test func everyRouteAndErrorStatus() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start(["--api-max-body-bytes", "2000"])
        #expect(bed.waitUntilReady())
        // The socket: mode 0660.
        let mode = (try FileManager.default.attributesOfItem(atPath: bed.socketPath)[.posixPermissions] as? Int)
        #expect(mode == 0o660)

        let health = try bed.curl(["http://localhost/healthz"])
        #expect(health.status == 200 && health.json?["status"] == .string("alive"))
        let ready = try bed.curl(["http://localhost/readyz"])
        #expect(ready.json?["status"] == .string("ready"))
        let status = try bed.curl(["http://localhost/v1/status"])
        #expect(status.status == 200)
        #expect(status.json?["connections"]?.arrayValue?.count == 1)
        #expect(status.json?["store_writable"] == .bool(true))
        let metrics = try bed.curl(["http://localhost/metrics"])
        #expect(metrics.status == 200 && metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)

        func expectError(_ result: HTTPResult, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status == status, sourceLocation: sourceLocation)
            #expect(result.headers["content-type"] == "application/json; charset=utf-8", sourceLocation: sourceLocation)
            let error = result.json?["error"]
            #expect(error?["status"]?.intValue == Int64(status), sourceLocation: sourceLocation)
            #expect(error?["code"] == .string(code), sourceLocation: sourceLocation)
            #expect(error?["message"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        }
        expectError(try bed.curl(["http://localhost/v1/nope"]), 404, "not_found")
        let wrongMethod = try bed.curl(["-X", "DELETE", "http://localhost/v1/messages"])
        expectError(wrongMethod, 405, "method_not_allowed")
        #expect(wrongMethod.headers["allow"] == "POST")
        expectError(try bed.curl(["-X", "POST", "http://localhost/healthz"]), 405, "method_not_allowed")
        expectError(try bed.post("{\"to\":"), 400, "bad_json")
        expectError(try bed.post("{\"a\":1}\nnot json\n", contentType: "application/x-ndjson"), 400, "bad_json")
        expectError(try bed.post("to=x", contentType: "application/x-www-form-urlencoded"), 415, "unsupported_media_type")
        expectError(try bed.post("[" + Array(repeating: Self.message("big"), count: 40).joined(separator: ",") + "]"), 413, "body_too_large")
        expectError(try bed.curl(["http://localhost/v1/events?limit=0"]), 400, "bad_request")
        expectError(try bed.curl(["http://localhost/v1/events?wait=61"]), 400, "bad_request")
        expectError(try bed.curl(["http://localhost/v1/events?after=-1"]), 400, "bad_request")
        expectError(try bed.curl(["http://localhost/v1/messages/never-seen"]), 404, "not_found")
        expectError(try bed.post("{\"through\":\"x\"}", path: "/v1/events/ack"), 400, "bad_request")
        expectError(try bed.post("{", path: "/v1/events/ack"), 400, "bad_json")
        // The server is still fine after all that.
        #expect(try bed.curl(["http://localhost/healthz"]).status == 200)
        #expect(bed.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: bed.socketPath))
    }

    @Test func batchWithValidAndInvalidMessagesThroughToTheOutcome() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        let invalid = #"{"to":"tok-aaaaaaaaaaaaaaaaaaaa","message_id":"b-2","time_to_live":"600"}"#
        let noID = #"{"to":"tok-bbbbbbbbbbbbbbbbbbbb","data":{"k":"v"}}"#
        let answer = try bed.post("[\(Self.message("b-1")),\(invalid),\(noID),\(Self.message("b-1"))]")
        #expect(answer.status == 202)
        let json = try #require(answer.json)
        #expect(json["accepted"]?.intValue == 2)
        #expect(json["rejected"]?.intValue == 2)
        let results = try #require(json["results"]?.arrayValue)
        #expect(results.count == 4)
        #expect(results[0]["status"] == .string("accepted") && results[0]["message_id"] == .string("b-1"))
        #expect(results[1]["status"] == .string("rejected") && results[1]["message_id"] == .string("b-2"))
        #expect(results[1]["field"] == .string("time_to_live"))
        #expect(results[1]["rule"]?.stringValue?.isEmpty == false)
        #expect(results[1]["value"] == .string("\"600\""))
        #expect(results[1]["retryable"] == .bool(false))
        #expect(results[2]["status"] == .string("accepted"))
        let generated = try #require(results[2]["message_id"]?.stringValue)
        #expect(results[3]["status"] == .string("rejected") && results[3]["field"] == .string("message_id"))
        #expect(results.map { $0["index"]?.intValue } == [0, 1, 2, 3])

        // Each accepted message through to its final outcome.
        for id in ["b-1", generated] {
            let final = bed.waitForFinal(id)
            #expect(final?["state"] == .string("final"), "message \(id): \(String(describing: final))")
            #expect(final?["outcome"]?["event"] == .string("acked"))
            #expect(final?["attempts"]?.intValue ?? 0 >= 1)
            #expect(final?["accepted_at"]?.stringValue?.hasSuffix("Z") == true)
        }
        // A resubmission of a final message: rejected, with its stored outcome.
        let again = try bed.post(Self.message("b-1"))
        let result = again.json?["results"]?.arrayValue?.first
        #expect(again.status == 202 && result?["status"] == .string("rejected"))
        #expect(result?["outcome"]?["event"] == .string("acked"))
        // JSON lines.
        let lines = try bed.post(Self.message("l-1") + "\n\n" + Self.message("l-2") + "\n", contentType: "application/x-ndjson")
        #expect(lines.status == 202 && lines.json?["accepted"]?.intValue == 2)

        // The feed has every event, in seq order, with the same objects as the events file.
        let feed = try bed.curl(["http://localhost/v1/events?after=0&limit=1000"])
        let events = try #require(feed.json?["events"]?.arrayValue)
        let seqs = events.compactMap { $0["seq"]?.intValue }
        #expect(seqs == Array(seqs.sorted()) && Set(seqs).count == seqs.count)
        #expect(feed.json?["next"]?.intValue == seqs.last)
        #expect(events.contains { $0["event"] == .string("accepted") && $0["message_id"] == .string("b-1") })
        #expect(events.contains { $0["event"] == .string("rejected") && $0["message_id"] == .string("b-2") })
        // A rejection's line is the message's 1-based position in its request (the invalid one was second,
        // the duplicate fourth), in the event and in the log line.
        #expect(events.contains { $0["event"] == .string("rejected") && $0["message_id"] == .string("b-2") && $0["line"] == .int(2) })
        #expect(events.contains { $0["event"] == .string("rejected") && $0["message_id"] == .string("b-1") && $0["line"] == .int(4) })
        #expect(bed.log.split(separator: "\n").contains { $0.contains("message rejected") && $0.contains("line=2") && $0.contains("b-2") })
        #expect(events.contains { $0["event"] == .string("acked") && $0["message_id"] == .string(generated) })
        #expect(events.allSatisfy { $0["time"]?.stringValue?.hasSuffix("Z") == true })
        #expect(bed.stop() == 0)
    }

    @Test func tcpListenerChecksTheBearerToken() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        let token = "secret-\(UUID().uuidString)"
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: bed.directory + "/token"))
        let port = freeLoopbackPort()
        try bed.start(["--api-listen", "127.0.0.1:\(port)", "--api-token-file", bed.directory + "/token"])
        #expect(bed.waitUntilReady())
        let url = "http://127.0.0.1:\(port)/v1/status"
        let missing = try runCurl([url])
        #expect(missing.status == 401 && missing.headers["www-authenticate"] == "Bearer")
        #expect(missing.json?["error"]?["code"] == .string("unauthorized"))
        #expect(try runCurl(["-H", "Authorization: Bearer wrong", url]).status == 401)
        #expect(try runCurl(["-H", "Authorization: Bearer \(token)x", url]).status == 401)
        let post = try runCurl(["-H", "Authorization: Bearer wrong", "-H", "Content-Type: application/json",
                                "--data-binary", Self.message("t-0"), "http://127.0.0.1:\(port)/v1/messages"])
        #expect(post.status == 401)
        #expect(try runCurl(["-H", "Authorization: Bearer \(token)", url]).status == 200)
        let accepted = try runCurl(["-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json",
                                    "--data-binary", Self.message("t-1"), "http://127.0.0.1:\(port)/v1/messages"])
        #expect(accepted.status == 202 && accepted.json?["accepted"]?.intValue == 1)
        // The unrefused attempt never reached the daemon; the token is in no log line.
        #expect(try bed.curl(["http://localhost/v1/messages/t-0"]).status == 404)
        #expect(bed.stop() == 0)
        #expect(!bed.log.contains(token))
        // TCP without a token is a configuration error.
        let process = try CommandLineTests.runProcess(CommandLineTests.binDirectory.appendingPathComponent("ccsd"),
                                                      ["serve", "--api-listen", "127.0.0.1:\(port)", "--sender-id", "1",
                                                       "--server-key-file", bed.directory + "/server-key"], environment: [:])
        #expect(process.status == 2 && process.stderr.contains("--api-listen"))
    }

    @Test func longPollWakesAndResumesAfterARestartWithoutSkippingAnEvent() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        // A long poll past the end waits, and a new commit wakes it (well before its 30 s).
        let start = try bed.curl(["http://localhost/v1/events?after=0&limit=1000"])
        let first = start.json?["next"]?.intValue ?? 0
        let woken = Results()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            woken.set(try? bed.curl(["http://localhost/v1/events?after=\(first)&wait=30"], maxTime: 40))
        }
        #expect(pollUntil(timeout: 10) {
            (try? bed.curl(["http://localhost/v1/status"]))?.json?["event_waiters"]?.intValue == 1
        })
        #expect(try bed.post(Self.message("p-1")).status == 202)
        #expect(group.wait(timeout: .now() + 45) == .success)
        let wakeEvents = woken.value?.json?["events"]?.arrayValue ?? []
        #expect(!wakeEvents.isEmpty)
        #expect(wakeEvents.first?["seq"]?.intValue == first + 1)

        // Read part of the feed, then restart ccsd on the same store; more messages in both runs.
        for index in 2...5 { #expect(try bed.post(Self.message("p-\(index)")).status == 202) }
        for index in 1...5 { #expect(bed.waitForFinal("p-\(index)") != nil) }
        var seen: [JSONValue] = []
        let part = try bed.curl(["http://localhost/v1/events?after=0&limit=3"])
        seen += part.json?["events"]?.arrayValue ?? []
        var next = try #require(part.json?["next"]?.intValue)
        #expect(try bed.post("{\"through\":\(next)}", path: "/v1/events/ack").json?["through"]?.intValue == next)
        #expect(bed.stop() == 0)
        try bed.start()
        #expect(bed.waitUntilReady())
        for index in 6...8 { #expect(try bed.post(Self.message("p-\(index)")).status == 202) }
        for index in 6...8 { #expect(bed.waitForFinal("p-\(index)") != nil) }
        // Without `after`: from the api consumer's cursor, which survived the restart.
        let resumed = try bed.curl(["http://localhost/v1/events?limit=2"])
        #expect(resumed.json?["events"]?.arrayValue?.first?["seq"]?.intValue == next + 1)
        // Page through the rest with `next`.
        for _ in 0..<100 {
            let page = try bed.curl(["http://localhost/v1/events?after=\(next)&limit=4"])
            let events = page.json?["events"]?.arrayValue ?? []
            if events.isEmpty { break }
            seen += events
            next = try #require(page.json?["next"]?.intValue)
        }
        // No gap, no repeat, and every message's acked event is there.
        #expect(seen.map { $0["seq"]?.intValue } == Array(1...Int64(seen.count)))
        for index in 1...8 {
            #expect(seen.contains { $0["event"] == .string("acked") && $0["message_id"] == .string("p-\(index)") })
        }
        #expect(bed.stop() == 0)
    }

    @Test func sighupReloadsOrRefusesABadConfigurationAndKeepsServing() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        let config = bed.directory + "/config.json"
        try Data(#"{"connections": 1}"#.utf8).write(to: URL(fileURLWithPath: config))
        try bed.start(["--config", config])
        #expect(bed.waitUntilReady())
        kill(bed.pid, SIGHUP)
        #expect(pollUntil(timeout: 10) { bed.log.contains("reload") })
        try Data(#"{"connections": "many"}"#.utf8).write(to: URL(fileURLWithPath: config))
        kill(bed.pid, SIGHUP)
        #expect(pollUntil(timeout: 10) { bed.log.contains("configuration reload refused; the running configuration is kept") })
        #expect(bed.log.contains("connections"))
        #expect(try bed.curl(["http://localhost/healthz"]).status == 200)
        #expect(try bed.post(Self.message("h-1")).status == 202)
        #expect(bed.stop() == 0)
    }

    @Test func servesOnTheSocketSystemdPasses() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start(socketActivated: true)
        #expect(bed.waitUntilReady())
        #expect(!FileManager.default.fileExists(atPath: bed.directory + "/unused.sock"))
        let answer = try bed.post(Self.message("sa-1"))
        #expect(answer.status == 202 && answer.json?["accepted"]?.intValue == 1)
        #expect(bed.waitForFinal("sa-1")?["outcome"]?["event"] == .string("acked"))
        #expect(bed.stop() == 0)
        #expect(bed.log.contains("fd 3"))
        // The socket is systemd's: ccsd leaves its file in place (and never made its own).
        #expect(FileManager.default.fileExists(atPath: bed.socketPath))
        #expect(!FileManager.default.fileExists(atPath: bed.directory + "/unused.sock"))
    }

    @Test func unavailableWhenTheQueueIsFullOrCcsdIsStopping() throws {
        // The emulator holds its acks, so messages stay in flight.
        let bed = try ServeBed { $0.ackLatencyMilliseconds = 600_000 }
        defer { bed.cleanUp() }
        try Data(#"{"shutdown_grace_seconds": 60}"#.utf8).write(to: URL(fileURLWithPath: bed.directory + "/config.json"))
        try bed.start(["--max-queued", "1", "--config", bed.directory + "/config.json"])
        #expect(bed.waitUntilReady())
        #expect(try bed.post(Self.message("q-1")).status == 202)
        #expect(pollUntil(timeout: 10) {
            (try? bed.curl(["http://localhost/v1/messages/q-1"]))?.json?["state"] == .string("in_flight")
        })
        let inFlight = try bed.curl(["http://localhost/v1/messages/q-1"]).json
        #expect(inFlight?["connection"]?.intValue == 1)
        let full = try bed.post(Self.message("q-2"))
        #expect(full.status == 503 && full.headers["retry-after"] != nil)
        #expect(full.json?["error"]?["code"] == .string("unavailable"))
        #expect(try bed.curl(["http://localhost/v1/messages/q-2"]).status == 404)
        // SIGTERM: the stop waits for q-1 (grace 60 s); submissions get 503, reads still work.
        kill(bed.pid, SIGTERM)
        #expect(pollUntil(timeout: 10) {
            (try? bed.curl(["http://localhost/v1/status"]))?.json?["lifecycle"] != .string("running")
        })
        let stopping = try bed.post(Self.message("q-3"))
        #expect(stopping.status == 503 && stopping.headers["retry-after"] != nil)
        #expect(stopping.json?["error"]?["message"]?.stringValue?.contains("stopping") == true)
        #expect(try bed.curl(["http://localhost/healthz"]).status == 200)
        let notReady = try bed.curl(["http://localhost/readyz"])
        #expect(notReady.status == 503 && notReady.json?["status"] == .string("not_ready"))
        bed.stop(signal: SIGKILL, timeout: 10)
    }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: HTTPResult?
    func set(_ value: HTTPResult?) { lock.withLock { stored = value } }
    var value: HTTPResult? { lock.withLock { stored } }
}

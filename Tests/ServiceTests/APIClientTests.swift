import CCS
import Foundation
import Testing
@testable import Service

/// The libcurl client and the client commands against a stand-in API server (Tests/Fixtures/api-stub-server.py)
/// on a Unix socket or loopback TCP, started per test and stopped by its PID.
@Suite struct APIClientTests {
    @Test func missingSocketIsExplained() throws {
        let path = "/tmp/ccsd-cli-none-\(UUID().uuidString.prefix(8)).sock"
        let client = APIClient(endpoint: .unixSocket(path: path), connectTimeout: 2, requestTimeout: 5)
        #expect(throws: APIClientError(kind: .unreachable, message: "cannot reach ccsd at \(path): no such socket; is `ccsd serve` running? (--api-socket PATH or CCSD_API_SOCKET names another socket)")) {
            try client.request("GET", "/v1/status")
        }
    }

    @Test func socketWithNobodyListeningIsConnectionRefused() throws {
        // A socket file left by a stopped service: bound, then closed.
        let path = "/tmp/ccsd-cli-stale-\(UUID().uuidString.prefix(8)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        defer { unlink(path) }
        let captured = CapturedOutput()
        let code = StatusCommand.run(["--api-socket", path], environment: [:], output: captured.output)
        #expect(code == 3)
        #expect(captured.err == ["ccsd status: cannot reach ccsd at \(path): connection refused; is `ccsd serve` running? (--api-socket PATH or CCSD_API_SOCKET names another socket)"])
    }

    @Test func sendFromFlagsPostsTheMessageAndPrintsTheResult() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let captured = CapturedOutput()
        let code = SendCommand.run(["--to", "tok-1", "--data", "k=v", "--message-id", "m-1"] + stub.apiFlags,
                                   environment: [:], output: captured.output)
        #expect(code == 0)
        #expect(captured.out == ["accepted m-1"])
        let request = try #require(stub.requests().first)
        #expect(request["method"] == .string("POST"))
        #expect(request["path"] == .string("/v1/messages"))
        #expect(request["content_type"] == .string("application/json"))
        #expect(request["authorization"] == .null)
        let body = try JSONValue.parse(try #require(request["body"]?.stringValue))
        #expect(body == .object(["to": .string("tok-1"), "data": .object(["k": .string("v")]), "message_id": .string("m-1")]))
    }

    @Test func sendFromJSONLinesFileWithRejection() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let file = stub.directory + "/batch.jsonl"
        try Data("{\"to\":\"a\",\"message_id\":\"m-1\"}\n{\"to\":\"reject-me\",\"message_id\":\"m-2\"}\n{\"to\":\"b\"}\n".utf8)
            .write(to: URL(fileURLWithPath: file))
        let captured = CapturedOutput()
        let code = SendCommand.run(["--file", file, "--api-socket", stub.socketPath], environment: [:], output: captured.output)
        #expect(code == 1)
        #expect(captured.out == ["accepted m-1", "rejected m-2: to: must be a registration token (got \"reject-me\")", "accepted srv-1"])
        #expect(stub.requests().first?["content_type"] == .string("application/x-ndjson"))
    }

    @Test func sendWaitExitsZeroWhenAckedAndOneWhenNackedOrExpired() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let acked = CapturedOutput()
        #expect(SendCommand.run(["--to", "t", "--message-id", "ok-1", "--wait", "--wait-timeout", "20"] + stub.apiFlags,
                                environment: [:], output: acked.output) == 0)
        #expect(acked.out == ["accepted ok-1", "acked ok-1"])
        let nacked = CapturedOutput()
        #expect(SendCommand.run(["--to", "t", "--message-id", "nack-1", "--wait"] + stub.apiFlags,
                                environment: [:], output: nacked.output) == 1)
        #expect(nacked.out == ["accepted nack-1", "nacked nack-1: DEVICE_UNREGISTERED; the registration token is invalid: remove it"])
        let expired = CapturedOutput()
        #expect(SendCommand.run(["--to", "t", "--message-id", "expire-1", "--wait"] + stub.apiFlags,
                                environment: [:], output: expired.output) == 1)
        #expect(expired.out.last == "expired expire-1")
        // The message was polled until final: in_flight first, then final.
        #expect(stub.requests().filter { $0["path"] == .string("/v1/messages/ok-1") }.count == 2)
    }

    @Test func eventsReadsThePagesAndAcknowledgesThem() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let captured = CapturedOutput()
        let code = EventsCommand.run(["--after", "1", "--limit", "2", "--ack"] + stub.apiFlags, environment: [:],
                                     output: captured.output)
        #expect(code == 0)
        // Each event exactly as the answer holds it: ccsd's key order (seq and time last), numbers digit for
        // digit (2419201.0, 1E2, -0, 1e308), escapes as written; not parsed and written again.
        #expect(captured.out == [
            #"{"event":"accepted","message_id":"m-1","seq":2,"time":"2026-11-30T12:00:00.100Z"}"#,
            #"{"event":"acked","message_id":"m-1","to":"tok","seq":3,"time":"2026-11-30T12:00:00.200Z"}"#,
            #"{"event":"upstream","message_id":"u-1","from":"dev","category":"app","data":{"k":"v","n":2419201.0,"e":1E2,"z":-0,"x":1e308,"s":"caf\u00e9 [a,b] \" }"},"seq":4,"time":"2026-11-30T12:00:00.300Z"}"#,
            #"{"event":"nacked","message_id":"m-2","error":"DEVICE_UNREGISTERED","description":null,"final":true,"invalid_token":true,"seq":5,"time":"2026-11-30T12:00:00.400Z"}"#,
        ])
        let requests = stub.requests().map { "\($0["method"]?.stringValue ?? "") \($0["path"]?.stringValue ?? "") \($0["body"]?.stringValue ?? "")" }
        #expect(requests == [
            "GET /v1/events?after=1&limit=2 ",
            "POST /v1/events/ack {\"through\":3}",
            "GET /v1/events?after=3&limit=2 ",
            "POST /v1/events/ack {\"through\":5}",
            "GET /v1/events?after=5&limit=2 ",
        ])
        // The next reader without --after starts after the acknowledged cursor.
        let again = CapturedOutput()
        #expect(EventsCommand.run(stub.apiFlags, environment: [:], output: again.output) == 0)
        #expect(again.out.isEmpty)
    }

    @Test func eventsFollowLongPolls() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let captured = CapturedOutput()
        let code = EventsCommand.run(["--after", "4", "--follow", "--poll-seconds", "1"] + stub.apiFlags, environment: [:],
                                     output: captured.output, maxRequests: 2)
        #expect(code == 0)
        #expect(captured.out.count == 1)
        #expect(stub.requests().compactMap { $0["path"]?.stringValue } == [
            "/v1/events?after=4&limit=100&wait=1", "/v1/events?after=5&limit=100&wait=1",
        ])
    }

    @Test func followingAServiceThatIsNotThereExitsAtOnce() {
        // Retrying with backoff is for a service that answered once and then restarts; a wrong socket path
        // must not hang.
        let path = "/tmp/ccsd-cli-none-\(UUID().uuidString.prefix(8)).sock"
        let captured = CapturedOutput()
        #expect(EventsCommand.run(["--follow", "--api-socket", path], environment: [:], output: captured.output,
                                  maxRequests: 3) == 3)
        #expect(captured.err.count == 1)
        #expect(captured.err.first?.hasPrefix("ccsd events: cannot reach ccsd at \(path): no such socket") == true)
    }

    @Test func statusPrintsTheTableOrTheRawJSON() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let table = CapturedOutput()
        #expect(StatusCommand.run(stub.apiFlags, environment: [:], output: table.output) == 0)
        #expect(table.out.first == "ccsd: running, store writable")
        #expect(table.out.contains("  1   127.0.0.1:5235  ready       12/100"))
        let raw = CapturedOutput()
        #expect(StatusCommand.run(["--json"] + stub.apiFlags, environment: ["CCSD_API_SOCKET": "/nonexistent"],
                                  output: raw.output) == 0)
        #expect(try JSONValue.parse(raw.out.joined())["queued"] == .int(7))
    }

    @Test func errorStatusAndTimeoutAreReported() throws {
        let stub = try APIStubServer()
        defer { stub.stop() }
        let client = APIClient(endpoint: .unixSocket(path: stub.socketPath), connectTimeout: 2, requestTimeout: 10)
        let busy = try client.request("GET", "/v1/busy")
        #expect(busy.status == 503)
        #expect(busy.errorSummary == "HTTP 503 unavailable: the queue is full (retry after 5 s)")
        #expect(throws: APIClientError(kind: .timeout, message: "ccsd at \(stub.socketPath) did not answer within 1 s")) {
            try client.request("GET", "/v1/slow", timeout: 1)
        }
    }

    @Test func tcpSendsTheBearerTokenFromTheTokenFile() throws {
        let stub = try APIStubServer(tcp: true, token: "s3cret")
        defer { stub.stop() }
        let tokenFile = stub.directory + "/token"
        try Data("s3cret\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        let captured = CapturedOutput()
        #expect(StatusCommand.run(stub.apiFlags + ["--api-token-file", tokenFile], environment: [:], output: captured.output) == 0)
        #expect(stub.requests().last?["authorization"] == .string("Bearer s3cret"))
        let refused = CapturedOutput()
        #expect(StatusCommand.run(stub.apiFlags, environment: [:], output: refused.output) == 3)
        #expect(refused.err == ["ccsd status: HTTP 401 unauthorized: missing or wrong bearer token"])
    }
}

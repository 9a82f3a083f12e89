import CCS
import Foundation
import Testing
@testable import Service

/// `ccsd send` without sockets: flags → the message JSON, usage errors, file bodies, and what an answer prints.
@Suite struct SendCommandTests {
    @Test func flagsBecomeOneLegacyMessage() throws {
        let options = try SendCommand.Options.parse([
            "--to", "tok-1", "--data", "score=5x1", "--data", "empty=", "--data", "eq=a=b",
            "--notification-title", "Hi", "--notification-body", "There", "--priority", "high",
            "--time-to-live", "600", "--message-id", "m-7", "--collapse-key", "scores",
        ])
        #expect(options.message == .object([
            "to": .string("tok-1"),
            "data": .object(["score": .string("5x1"), "empty": .string(""), "eq": .string("a=b")]),
            "notification": .object(["title": .string("Hi"), "body": .string("There")]),
            "priority": .string("high"), "time_to_live": .int(600), "message_id": .string("m-7"),
            "collapse_key": .string("scores"),
        ]))
        #expect(options.wait == false)
    }

    @Test func conditionInsteadOfTo() throws {
        let options = try SendCommand.Options.parse(["--condition", "'news' in topics", "--wait"])
        #expect(options.message == .object(["condition": .string("'news' in topics")]))
        #expect(options.wait)
    }

    @Test(arguments: [
        (["--data", "k=v"], "--to", "required: the target (a registration token or /topics/NAME), or --condition"),
        (["--to", "t", "--condition", "c"], "--condition", "give either --to or --condition, not both"),
        (["--to", "t", "--data", "=v"], "--data", "must be KEY=VALUE with a non-empty KEY, got \"=v\""),
        (["--to", "t", "--data", "novalue"], "--data", "must be KEY=VALUE with a non-empty KEY, got \"novalue\""),
        (["--to", "t", "--data", "k=1", "--data", "k=2"], "--data", "the key \"k\" is given twice"),
        (["--to", "t", "--priority", "urgent"], "--priority", "must be high or normal, got \"urgent\""),
        (["--to", "t", "--time-to-live", "2419201"], "--time-to-live", "must be an integer from 0 to 2419200, got \"2419201\""),
        (["--to", "t", "--time-to-live", "1h"], "--time-to-live", "must be an integer from 0 to 2419200, got \"1h\""),
        (["--to"], "--to", "needs a value"),
        (["--file", "m.json", "--to", "t"], "--to", "cannot be combined with --file (put it in the file's messages)"),
        (["--to", "t", "--wait-timeout", "5"], "--wait-timeout", "only with --wait"),
        (["--to", "t", "--notification-titel", "x"], "--notification-titel", "unknown option (did you mean --notification-title?)"),
        (["--to", "t", "--api-socket", "/s", "--api-url", "http://127.0.0.1:1"], "--api-url", "give either --api-socket or --api-url, not both"),
    ])
    func badFlagsNameTheFlagAndRule(arguments: [String], flag: String, rule: String) throws {
        let expected = UsageError(flag, rule)
        #expect(throws: expected) {
            let options = try SendCommand.Options.parse(arguments)
            _ = try options.api.endpoint(environment: [:])
        }
    }

    @Test func usageErrorsExitTwoAndSendNothing() {
        let captured = CapturedOutput()
        let code = SendCommand.run(["--to", "t", "--priority", "urgent", "--api-socket", "/nonexistent/api.sock"],
                                   environment: [:], output: captured.output)
        #expect(code == 2)
        #expect(captured.err.first == "ccsd send: --priority: must be high or normal, got \"urgent\"\n(ccsd send --help for the options)")
    }

    @Test func helpListsEveryFlagAndTheExitCodes() {
        let captured = CapturedOutput()
        #expect(SendCommand.run(["--help"], environment: [:], output: captured.output) == 0)
        let text = captured.out.joined()
        for flag in SendCommand.Options.flags { #expect(text.contains(flag), "\(flag) missing from the help") }
        #expect(text.contains("exit codes: 0"))
    }

    @Test func fileBodiesAreJSONOrJSONLines() {
        #expect(SendCommand.body(fileContents: Data(#"{"to":"a"}"#.utf8)).contentType == "application/json")
        #expect(SendCommand.body(fileContents: Data(#"[{"to":"a"},{"to":"b"}]"#.utf8)).contentType == "application/json")
        #expect(SendCommand.body(fileContents: Data("{\"to\":\"a\"}\n{\"to\":\"b\"}\n".utf8)).contentType == "application/x-ndjson")
    }

    @Test func jsonLinesGoInRequestsOfAtMostTheAPIsBatchLimitInOrder() {
        let lines = (0..<2500).map { "{\"to\":\"t\",\"message_id\":\"m-\($0)\"}" }
        let bodies = SendCommand.bodies(fileContents: Data((lines.joined(separator: "\n") + "\n\n").utf8))
        #expect(bodies.map { $0.data.split(separator: 0x0A).count } == [1000, 1000, 500])
        #expect(bodies.allSatisfy { $0.contentType == "application/x-ndjson" })
        let rejoined = bodies.flatMap { String(decoding: $0.data, as: UTF8.self).split(separator: "\n").map(String.init) }
        #expect(rejoined == lines)
        // One JSON value (an object or an array) is one request, as written.
        #expect(SendCommand.bodies(fileContents: Data(#"[{"to":"a"},{"to":"b"}]"#.utf8)).count == 1)
    }

    @Test func endpointComesFromFlagsThenEnvironmentThenDefault() throws {
        var options = APIOptions()
        #expect(try options.endpoint(environment: [:]) == .unixSocket(path: "/run/ccsd/api.sock"))
        #expect(try options.endpoint(environment: ["CCSD_API_SOCKET": "/tmp/x.sock"]) == .unixSocket(path: "/tmp/x.sock"))
        options.socketPath = "/tmp/flag.sock"
        #expect(try options.endpoint(environment: ["CCSD_API_SOCKET": "/tmp/x.sock", "CCSD_API_URL": "http://h:1"])
                == .unixSocket(path: "/tmp/flag.sock"))
        options = APIOptions()
        options.url = "http://127.0.0.1:8080/"
        #expect(try options.endpoint(environment: [:]) == .tcp(baseURL: "http://127.0.0.1:8080", token: nil))
        options.url = "127.0.0.1:8080"
        #expect(throws: UsageError("--api-url", "must be http://HOST:PORT (or https://), got \"127.0.0.1:8080\"")) {
            try options.endpoint(environment: [:])
        }
    }

    @Test func answerWithRejectionsPrintsEachAndExitsOne() {
        let body = #"""
            {"accepted":1,"rejected":2,"results":[
              {"index":0,"message_id":"m-1","status":"accepted"},
              {"index":1,"message_id":"m-2","status":"rejected","field":"time_to_live","rule":"must be an integer",
               "error":"time_to_live: must be an integer (got \"600\")","retryable":false},
              {"index":2,"status":"rejected","field":"to","rule":"required","error":"to: required","retryable":true}]}
            """#
        let result = SendCommand.submission(APIResponse(status: 202, body: Data(body.utf8)))
        #expect(result.lines == [
            "accepted m-1",
            "rejected m-2: time_to_live: must be an integer (got \"600\")",
            "rejected #2: to: required (retryable: submit it again later)",
        ])
        #expect(result.exitCode == 1)
        #expect(result.accepted == ["m-1"])
    }

    @Test func alreadyFinalMessageAnswersWithItsOutcome() {
        let body = #"{"accepted":0,"rejected":1,"results":[{"index":0,"message_id":"m-1","status":"rejected","field":"message_id","error":"message_id: already final","outcome":{"event":"nacked","message_id":"m-1","error":"DEVICE_UNREGISTERED","description":null,"final":true,"invalid_token":true}}]}"#
        let result = SendCommand.submission(APIResponse(status: 202, body: Data(body.utf8)))
        #expect(result.lines == ["already final m-1: nacked: DEVICE_UNREGISTERED; the registration token is invalid: remove it"])
        #expect(result.exitCode == 1)
        #expect(result.accepted.isEmpty)
    }

    @Test func errorStatusIsReportedWithCodeMessageAndRetryAfter() {
        let body = #"{"error":{"status":503,"code":"unavailable","message":"the queue is full"}}"#
        let result = SendCommand.submission(APIResponse(status: 503, headers: ["retry-after": "5"], body: Data(body.utf8)))
        #expect(result.errors == ["ccsd send: the service refused the submission: HTTP 503 unavailable: the queue is full (retry after 5 s)"])
        #expect(result.exitCode == 3)
    }

    @Test func messageStatesBecomeProgress() {
        func progress(_ status: Int, _ body: String) -> SendCommand.Progress {
            SendCommand.progress(of: "m-1", APIResponse(status: status, body: Data(body.utf8)))
        }
        #expect(progress(200, #"{"message_id":"m-1","state":"in_flight","outcome":null}"#) == .pending(state: "in_flight"))
        #expect(progress(200, #"{"state":"final","outcome":{"event":"acked","message_id":"m-1"}}"#) == .final(line: "acked m-1", acked: true))
        #expect(progress(200, #"{"state":"final","outcome":{"event":"expired","message_id":"m-1"}}"#) == .final(line: "expired m-1", acked: false))
        #expect(progress(200, #"{"state":"final","outcome":{"event":"nacked","error":"BAD_REGISTRATION","description":"bad token","final":true}}"#)
                == .final(line: "nacked m-1: BAD_REGISTRATION (bad token)", acked: false))
        #expect(progress(404, #"{"error":{"status":404,"code":"not_found","message":"no message"}}"#)
                == .failed("m-1: ccsd no longer holds this message (see its final event in `ccsd events`)"))
    }

    @Test func messageIDIsPercentEncodedInThePath() {
        #expect(SendCommand.messagePath("a/b c?") == "/v1/messages/a%2Fb%20c%3F")
        #expect(SendCommand.messagePath("m-1.x_~") == "/v1/messages/m-1.x_~")
        #expect(SendCommand.messagePath("é") == "/v1/messages/%C3%A9")  // UTF-8 bytes, each encoded
    }
}

import Foundation
import Testing
@testable import Service
import Daemon
import HTTPServer

@Suite struct ServeOptionsTests {
    @Test func apiFlagsAndRunFlagsTogether() throws {
        let options = try ServeOptions.parse(["--api-socket", "/tmp/x.sock", "--sender-id", "42", "--api-listen", "9000",
                                              "--api-max-body-bytes", "1000", "--max-queued", "5", "--log-format", "json",
                                              "--connections", "3", "--api-socket-group", "ccsd"])
        #expect(options.apiSocket == "/tmp/x.sock")
        #expect(options.apiSocketGroup == "ccsd")
        #expect(options.apiListen?.host == "127.0.0.1" && options.apiListen?.port == 9000)
        #expect(options.maxBodyBytes == 1000 && options.run.maxQueued == 5)
        #expect(options.logFormat == .json)
        #expect(options.run.senderID == "42" && options.run.connections == 3)
        #expect(try ServeOptions.parse([]).apiSocket == "/run/ccsd/api.sock")
    }

    @Test func batchFlagsAndBadValuesAreRefusedNamingTheFlag() {
        for (arguments, field) in [(["--input", "x"], "--input"), (["--exit-when-done"], "--exit-when-done"),
                                   (["--api-listen", "host:99999"], "--api-listen"), (["--log-format", "xml"], "--log-format"),
                                   (["--api-max-body-bytes", "0"], "--api-max-body-bytes"), (["--conections", "2"], "--conections")] {
            #expect(throws: ConfigurationError.self) { try ServeOptions.parse(arguments) }
            do { _ = try ServeOptions.parse(arguments) } catch { #expect(error.field == field) }
        }
    }

    @Test func tokenFromTheFileOrTheCredentialNeverEmpty() throws {
        let directory = NSTemporaryDirectory() + "ccsd-token-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("from-file\n".utf8).write(to: URL(fileURLWithPath: directory + "/token"))
        try Data("from-credential".utf8).write(to: URL(fileURLWithPath: directory + "/api-token"))
        try Data("\n".utf8).write(to: URL(fileURLWithPath: directory + "/empty"))
        var options = try ServeOptions.parse(["--api-listen", "127.0.0.1:9000"])
        #expect(try options.bearerToken(environment: ["CREDENTIALS_DIRECTORY": directory]) == "from-credential")
        #expect(throws: ConfigurationError.self) { try options.bearerToken(environment: [:]) }
        options.apiTokenFile = directory + "/token"
        #expect(try options.bearerToken(environment: ["CREDENTIALS_DIRECTORY": directory]) == "from-file")
        options.apiTokenFile = directory + "/empty"
        #expect(throws: ConfigurationError.self) { try options.bearerToken(environment: [:]) }
        #expect(try ServeOptions.parse([]).bearerToken(environment: [:]) == nil)
    }

    @Test func bodiesSplitIntoMessages() throws {
        let one = try APIRouter.split(Data(#"{"a":1}"#.utf8), jsonLines: false).get()
        #expect(one.count == 1)
        let array = try APIRouter.split(Data(#"[{"a":1},{"b":2}]"#.utf8), jsonLines: false).get()
        #expect(array.map { String(decoding: $0, as: UTF8.self) } == [#"{"a":1}"#, #"{"b":2}"#])
        let lines = try APIRouter.split(Data("{\"a\":1}\n\n{\"b\":2}\r\n".utf8), jsonLines: true).get()
        #expect(lines.count == 2)
        // JSON lines sent as application/json are taken as lines.
        #expect(try APIRouter.split(Data("{\"a\":1}\n{\"b\":2}\n".utf8), jsonLines: false).get().count == 2)
        for (body, lines) in [("{\"a\":", false), ("{\"a\":1}\nnope\n", true), ("  ", false), ("[]", false)] {
            guard case .failure = APIRouter.split(Data(body.utf8), jsonLines: lines) else {
                Issue.record("accepted \(body)")
                continue
            }
        }
        if case .failure(let error) = APIRouter.split(Data("{\"a\":1}\nnope\n".utf8), jsonLines: true) {
            #expect(String(decoding: error.response.body, as: UTF8.self).contains("line 2"))
            #expect(error.response.status == 400)
        }
    }
}

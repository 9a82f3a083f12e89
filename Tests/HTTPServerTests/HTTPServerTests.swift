import Foundation
import Testing
import TLS
@testable import HTTPServer

/// The HTTP server on a real event loop, driven by `curl` over a temporary Unix socket and loopback TCP.
@Suite struct HTTPServerTests {
    /// A server on its own loop with a handler the test chooses; stopped (and its socket removed) by `stop`.
    final class Running: @unchecked Sendable {
        let loop = EventLoop(label: "http.test")
        let directory = NSTemporaryDirectory() + "ccsd-http-\(UUID().uuidString.prefix(8))"
        var socketPath: String { directory + "/api.sock" }
        var server: HTTPServer!

        init(limits: HTTPServer.Limits = HTTPServer.Limits(), listeners: (String) -> [HTTPServer.Listener],
             handler: @escaping HTTPServer.Handler) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let listeners = listeners(directory + "/api.sock")
            server = try loop.submitAndWait { () throws(HTTPServerError) -> HTTPServer in
                let server = HTTPServer(loop: loop, limits: limits, handler: handler)
                try server.start(listeners)
                return server
            }
        }

        var tcpPort: UInt16 { loop.submitAndWait { server.tcpPorts[0] } }

        func stop() {
            loop.submitAndWait { server.stop() }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Echoes the request: method, path, query `q`, header `x-test`, body.
    static func echo(_ request: HTTPRequest, _ responder: HTTPResponder) {
        responder.respond(.json(200, "{\"method\":\"\(request.method)\",\"path\":\"\(request.path)\",\"q\":\"\(request.query["q"] ?? "")\","
                                 + "\"x\":\"\(request.header("X-Test") ?? "")\",\"body\":\(request.body.count)}"))
    }

    @Test func servesOnAUnixSocketWithMode0660AndRemovesItAtStop() throws {
        let run = try Running(listeners: { [.unixSocket(path: $0)] }, handler: Self.echo)
        let attributes = try FileManager.default.attributesOfItem(atPath: run.socketPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o660)
        let result = try curl(["--unix-socket", run.socketPath, "-H", "X-Test: yes", "-d", "hello",
                               "http://localhost/v1/thing?q=a%20b"])
        #expect(result.status == 200)
        #expect(result.headers["content-type"] == "application/json; charset=utf-8")
        #expect(result.body == "{\"method\":\"POST\",\"path\":\"/v1/thing\",\"q\":\"a b\",\"x\":\"yes\",\"body\":5}\n")
        run.stop()
        #expect(!FileManager.default.fileExists(atPath: run.socketPath))
    }

    @Test func replacesAStaleSocketButRefusesToRemoveAnyOtherFile() throws {
        let directory = NSTemporaryDirectory() + "ccsd-http-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A stale socket: bound by a process that is gone (here: a socket closed without unlinking).
        let stale = try ListeningSocket.unix(path: directory + "/api.sock", mode: 0o600, group: nil)
        close(stale)
        let run = try Running(listeners: { _ in [.unixSocket(path: directory + "/api.sock")] }, handler: Self.echo)
        #expect(try curl(["--unix-socket", directory + "/api.sock", "http://localhost/"]).status == 200)
        run.stop()

        _ = FileManager.default.createFile(atPath: directory + "/file", contents: Data("keep".utf8))
        #expect(throws: HTTPServerError.self) {
            _ = try Running(listeners: { _ in [.unixSocket(path: directory + "/file")] }, handler: Self.echo)
        }
        #expect(FileManager.default.contents(atPath: directory + "/file") == Data("keep".utf8))
    }

    @Test func tcpListenerNeedsTheBearerToken() throws {
        let token = "tok-\(UUID().uuidString)"
        let calls = Counter()
        let run = try Running(listeners: { _ in [.tcp(host: "127.0.0.1", port: 0, bearerToken: token)] }) { request, responder in
            calls.increment()
            Self.echo(request, responder)
        }
        defer { run.stop() }
        let url = "http://127.0.0.1:\(run.tcpPort)/v1/status"
        let missing = try curl([url])
        #expect(missing.status == 401)
        #expect(missing.headers["www-authenticate"] == "Bearer")
        #expect(missing.body.contains("\"code\":\"unauthorized\""))
        #expect(!missing.body.contains(token))
        let wrong = try curl(["-H", "Authorization: Bearer \(token)x", "-d", "body", url])
        #expect(wrong.status == 401)
        let prefix = try curl(["-H", "Authorization: Bearer \(token.dropLast())", url])
        #expect(prefix.status == 401)
        #expect(calls.value == 0)
        let right = try curl(["-H", "Authorization: Bearer \(token)", url])
        #expect(right.status == 200)
        #expect(calls.value == 1)
    }

    @Test func bodyOverTheLimitIsRefusedWith413DeclaredOrChunked() throws {
        let calls = Counter()
        let run = try Running(limits: HTTPServer.Limits(maxBodyBytes: 100), listeners: { [.unixSocket(path: $0)] }) { request, responder in
            calls.increment()
            Self.echo(request, responder)
        }
        defer { run.stop() }
        let big = String(repeating: "x", count: 101)
        let declared = try curl(["--unix-socket", run.socketPath, "-d", big, "http://localhost/v1/messages"])
        #expect(declared.status == 413)
        #expect(declared.body.contains("\"code\":\"body_too_large\""))
        let chunked = try curl(["--unix-socket", run.socketPath, "-H", "Transfer-Encoding: chunked", "-d", big,
                                "http://localhost/v1/messages"])
        #expect(chunked.status == 413)
        #expect(calls.value == 0)
        let fits = try curl(["--unix-socket", run.socketPath, "-d", String(big.dropFirst()), "http://localhost/v1/messages"])
        #expect(fits.status == 200)
        #expect(fits.body.contains("\"body\":100"))
    }

    @Test func handlersAnswerLaterAndOutOfOrder() throws {
        // /first waits (suspended) until /second has come in and been answered; then /first is answered on a
        // later loop turn. Both get their own answer.
        let held = Held()
        let run = try Running(listeners: { [.unixSocket(path: $0)] }) { request, responder in
            if request.path == "/first" {
                held.responder = responder
                held.request = request
                return
            }
            Self.echo(request, responder)
            if let first = held.responder, let request = held.request {
                held.loop!.schedule(after: 0) { Self.echo(request, first) }
            }
        }
        held.loop = run.loop
        defer { run.stop() }
        let results = Results()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            results.append((try? curl(["--unix-socket", run.socketPath, "http://localhost/first"]))?.body ?? "")
        }
        var waiting = 0
        for _ in 0..<200 where waiting == 0 {
            usleep(20_000)
            waiting = run.loop.submitAndWait { run.server.waitingRequests }
        }
        #expect(waiting == 1)
        let second = try curl(["--unix-socket", run.socketPath, "http://localhost/second"])
        #expect(second.body.contains("\"path\":\"/second\""))
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(results.values.first?.contains("\"path\":\"/first\"") == true)
        #expect(run.loop.submitAndWait { run.server.waitingRequests } == 0)
    }

    @Test func aWaitingRequestOutlivesTheIdleTimeout() throws {
        // Idle timeout 1 s; the answer comes after 2.5 s of waiting (suspended): it still reaches the client.
        let held = Held()
        let run = try Running(limits: HTTPServer.Limits(connectionTimeoutSeconds: 1), listeners: { [.unixSocket(path: $0)] }) { request, responder in
            held.loop!.schedule(after: 2.5) { Self.echo(request, responder) }
        }
        held.loop = run.loop
        defer { run.stop() }
        let result = try curl(["--unix-socket", run.socketPath, "http://localhost/slow"])
        #expect(result.status == 200)
        #expect(result.body.contains("/slow"))
    }

    @Test func stopAnswersWaitingRequestsWith503() throws {
        let run = try Running(listeners: { [.unixSocket(path: $0)] }) { _, _ in }  // never answers
        let results = Results()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            results.append((try? curl(["--unix-socket", run.socketPath, "http://localhost/wait"]))?.body ?? "none")
            done.signal()
        }
        // Bounded wait until the request is suspended in the server.
        var waiting = 0
        for _ in 0..<200 where waiting == 0 {
            usleep(20_000)
            waiting = run.loop.submitAndWait { run.server.waitingRequests }
        }
        #expect(waiting == 1)
        run.stop()
        #expect(done.wait(timeout: .now() + 15) == .success)
        #expect(results.values.first?.contains("\"status\":503") == true)
    }

    @Test func parsesHostAndPort() {
        #expect(ListeningSocket.parseHostPort("127.0.0.1:8080")! == ("127.0.0.1", 8080))
        #expect(ListeningSocket.parseHostPort("[::1]:9")! == ("::1", 9))
        #expect(ListeningSocket.parseHostPort("8080")! == ("127.0.0.1", 8080))
        #expect(ListeningSocket.parseHostPort("host:99999") == nil)
        #expect(ListeningSocket.parseHostPort("host:") == nil)
        #expect(ListeningSocket.parseHostPort("[::1]8080") == nil)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ value: String) { lock.withLock { list.append(value) } }
    var values: [String] { lock.withLock { list } }
}

final class Held: @unchecked Sendable {
    var loop: EventLoop?
    var responder: HTTPResponder?
    var request: HTTPRequest?
}

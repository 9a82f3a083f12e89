import CCS
import Foundation
@testable import Service

/// Tests/Fixtures/api-stub-server.py run as a process: a stand-in for the API of `ccsd serve` on a Unix socket
/// (or loopback TCP), logging each request it gets. Stopped by its PID in `stop()` (call it in `defer`).
final class APIStubServer {
    let process = Process()
    let directory: String
    let socketPath: String
    let logPath: String
    private(set) var port: Int?

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/api-stub-server.py").path

    init(tcp: Bool = false, token: String? = nil) throws {
        // Short: a Unix socket path has at most 107 bytes.
        directory = "/tmp/ccsd-cli-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socketPath = directory + "/api.sock"
        logPath = directory + "/requests.jsonl"
        let portFile = directory + "/port"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, socketPath, logPath] + (tcp ? ["--tcp", portFile] : [])
            + (token.map { ["--token", $0] } ?? [])
        try process.run()
        // Bounded: 10 s for the listener to appear.
        for _ in 0..<400 {
            if tcp, let text = try? String(contentsOfFile: portFile, encoding: .utf8), let number = Int(text) {
                port = number
                return
            }
            // The ready file is written once the socket listens (the socket file appears at bind, before).
            if !tcp, FileManager.default.fileExists(atPath: logPath + ".ready") { return }
            guard process.isRunning else { break }
            usleep(25_000)
        }
        stop()
        throw StubError(message: "the API stub server did not start")
    }

    struct StubError: Error { var message: String }

    /// The requests the stub got, in order (method, path, content_type, authorization, body).
    func requests() -> [JSONValue] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
    }

    /// The API flags that reach this stub.
    var apiFlags: [String] {
        if let port { return ["--api-url", "http://127.0.0.1:\(port)"] }
        return ["--api-socket", socketPath]
    }

    func stop() {
        let pid = process.processIdentifier
        if process.isRunning {
            kill(pid, SIGTERM)
            // Bounded: 5 s to exit, then SIGKILL.
            for _ in 0..<200 where process.isRunning { usleep(25_000) }
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Collects what a command prints.
final class CapturedOutput {
    var out: [String] = []
    var err: [String] = []
    var output: CommandOutput {
        CommandOutput(out: { [unowned self] in self.out.append($0) }, err: { [unowned self] in self.err.append($0) })
    }
}

import CCS
import CCSEmulator
import Foundation

/// `ccsd serve` as a child process against the emulator (in this process, real TLS on loopback), driven with
/// `curl` over its API socket (and TCP). The bed owns the emulator and the directory (socket, state, log),
/// so that ccsd can be stopped and started again on the same store. Every process is stopped by its PID.
final class ServeBed: @unchecked Sendable {
    // @unchecked Sendable: `process` is replaced only by the test's own thread.
    static let senderID = "123456789012"
    let emulator: CCSEmulator
    let directory: String
    let serverKey = "key-\(UUID().uuidString)"
    let endpointPort: Int
    var socketPath: String { directory + "/api.sock" }
    var logPath: String { directory + "/stderr.log" }
    private(set) var process: Process?

    init(emulator adjust: (inout EmulatorConfiguration) -> Void = { _ in }) throws {
        // Short: a Unix socket path has at most 107 bytes.
        directory = NSTemporaryDirectory() + "ccsd-api-\(UUID().uuidString.prefix(13))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: Self.senderID, serverKey: serverKey,
            caDirectory: directory, ackLatencyMilliseconds: 5)
        adjust(&configuration)
        emulator = CCSEmulator(configuration: configuration)
        endpointPort = try emulator.start()[0]
        try Data(serverKey.utf8).write(to: URL(fileURLWithPath: directory + "/server-key"))
    }

    /// Starts `ccsd serve` (SQLite store in the bed's state directory) with `extra` flags; waits (bounded)
    /// until its socket answers `/healthz`.
    /// - Parameter socketActivated: run it under `systemd-socket-activate -l SOCKET` (it binds the socket and
    ///   execs ccsd on the first connection, passing the socket as fd 3); `--api-socket` then names another path.
    func start(_ extra: [String] = [], environment: [String: String] = [:], socketActivated: Bool = false) throws {
        let process = Process()
        let ccsd = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        // systemd-socket-activate closes every descriptor but the socket before it execs ccsd, the one Foundation's
        // Process watches the child by included; so a shell runs it as its child (and ccsd's PID is the shell's child).
        process.executableURL = socketActivated ? URL(fileURLWithPath: "/bin/sh") : ccsd
        let prefix = socketActivated ? ["-c", "/usr/bin/systemd-socket-activate \"$@\"; exit $?", "sh", "-l", socketPath, ccsd.path] : []
        let apiSocket = socketActivated ? directory + "/unused.sock" : socketPath
        process.arguments = prefix + ["serve", "--endpoint", "localhost:\(endpointPort)", "--ca-file", directory + "/ca.pem",
                             "--sender-id", Self.senderID, "--server-key-file", directory + "/server-key",
                             "--state-dir", directory + "/state", "--api-socket", apiSocket] + extra
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        _ = pollUntil(timeout: 20) { (try? self.curl(["http://localhost/healthz"]).status) == 200 || !process.isRunning }
    }

    /// Waits (bounded) until `/readyz` says ready.
    @discardableResult
    func waitUntilReady() -> Bool {
        pollUntil(timeout: 20) { (try? self.curl(["http://localhost/readyz"]).status) == 200 }
    }

    /// Sends `sig` to ccsd by its PID; waits at most `timeout` seconds (then SIGKILL by PID). The exit status.
    @discardableResult
    func stop(signal sig: Int32 = SIGTERM, timeout: Double = 30) -> Int32? {
        guard let process else { return nil }
        if process.isRunning { kill(pid, sig) }
        return process.exitStatus(waitingAtMost: timeout)
    }

    /// ccsd's PID: the process started, or, under `systemd-socket-activate`, the shell's child.
    var pid: Int32 {
        guard let process else { return 0 }
        let shell = process.processIdentifier
        guard process.executableURL?.path == "/bin/sh",
              let children = try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8),
              let child = children.split(separator: " ").first.flatMap({ Int32($0) }) else { return shell }
        return child
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func cleanUp() {
        if let process, process.isRunning { stop(signal: SIGKILL, timeout: 5) }
        killLeftoverProcesses(matching: directory)
        emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `curl` over the API socket.
    func curl(_ arguments: [String], maxTime: Int = 15) throws -> HTTPResult {
        try runCurl(["--unix-socket", socketPath] + arguments, maxTime: maxTime)
    }

    /// `POST /v1/messages` with `body` (JSON unless `contentType` says otherwise).
    func post(_ body: String, contentType: String = "application/json", path: String = "/v1/messages") throws -> HTTPResult {
        try curl(["-H", "Content-Type: \(contentType)", "--data-binary", body, "http://localhost\(path)"])
    }

    /// `GET /v1/messages/ID` until its state is `final` (bounded); the last answer.
    func waitForFinal(_ messageID: String, timeout: Double = 20) -> [String: JSONValue]? {
        var last: [String: JSONValue]?
        _ = pollUntil(timeout: timeout) {
            last = (try? self.curl(["http://localhost/v1/messages/\(messageID)"]))?.json
            return last?["state"] == .string("final")
        }
        return last
    }
}

/// One HTTP answer as `curl -i` printed it.
struct HTTPResult {
    let status: Int
    let headers: [String: String]
    let body: String
    var json: [String: JSONValue]? { (try? JSONValue.parse(body))?.objectValue }
}

/// Runs `curl -s -i` (bounded by `--max-time`; SIGKILL by PID if it outlives that) and parses the last response.
func runCurl(_ arguments: [String], maxTime: Int = 15) throws -> HTTPResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-i", "--max-time", "\(maxTime)"] + arguments
    // Output to a file, not a pipe: a pipe's end inherited by another child (a ccsd started meanwhile) would
    // hold its end of file back.
    let outputPath = NSTemporaryDirectory() + "ccsd-curl-\(UUID().uuidString)"
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    process.standardOutput = FileHandle(forWritingAtPath: outputPath)
    process.standardError = FileHandle.nullDevice
    try process.run()
    _ = process.exitStatus(waitingAtMost: Double(maxTime + 5))
    let data = FileManager.default.contents(atPath: outputPath) ?? Data()
    var rest = Substring(String(decoding: data, as: UTF8.self))
    var status = 0
    var headers: [String: String] = [:]
    while rest.hasPrefix("HTTP/"), let end = rest.range(of: "\r\n\r\n") {
        let head = rest[..<end.lowerBound].components(separatedBy: "\r\n")
        rest = rest[end.upperBound...]
        status = Int(head[0].split(separator: " ")[1]) ?? 0
        headers = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    return HTTPResult(status: status, headers: headers, body: String(rest))
}

/// A free loopback TCP port (bound and released; the test uses it right after).
func freeLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return UInt16(bigEndian: address.sin_port)
}

/// Polls `condition` every 50 ms for at most `timeout` seconds; whether it became true.
func pollUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}

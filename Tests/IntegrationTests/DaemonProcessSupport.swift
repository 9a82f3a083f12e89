import CCS
import CCSEmulator
import Foundation
import TLS

/// The built `ccsd` executable as a child process, run against the emulator in this process over real TLS
/// on loopback. Its stderr (the log) and events go to files in the run's directory; it is stopped by its
/// PID, and every wait is bounded.
final class CCSDProcess: @unchecked Sendable {
    // @unchecked Sendable: the stored properties are immutable; `Process` is only started, signalled and waited on.
    static let senderID = "123456789012"
    let emulator: CCSEmulator
    let directory: String
    let eventsPath: String
    let logPath: String
    let stdoutPath: String
    /// The key ccsd was given (the emulator's unless a wrong one was asked for).
    let keyGiven: String
    private let process = Process()

    /// - Parameters:
    ///   - input: the `--input` argument; `nil` for a FIFO at `fifoPath` made here.
    ///   - serverKey: the emulator's server key; `wrongKey` makes ccsd use another one.
    ///   - extraArguments: more `ccsd run` flags (`--log-level debug`, `--exit-when-done`).
    init(input: String? = nil, serverKey: String = "key-\(UUID().uuidString)", wrongKey: String? = nil,
         extraArguments: [String] = [], emulator adjustEmulator: (inout EmulatorConfiguration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "ccsd-proc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        eventsPath = directory + "/events.jsonl"
        logPath = directory + "/stderr.log"
        stdoutPath = directory + "/stdout.log"
        keyGiven = wrongKey ?? serverKey

        var configuration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: Self.senderID, serverKey: serverKey,
            caDirectory: directory, ackLatencyMilliseconds: 5)
        adjustEmulator(&configuration)
        emulator = CCSEmulator(configuration: configuration)
        let ports = try emulator.start()

        let keyFile = directory + "/server-key"
        try Data(keyGiven.utf8).write(to: URL(fileURLWithPath: keyFile))
        let inputPath = input ?? fifoPath
        if input == nil { guard mkfifo(fifoPath, 0o600) == 0 else { throw POSIXError(.EEXIST) } }

        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["run", "--endpoint", "localhost:\(ports[0])", "--ca-file", directory + "/ca.pem",
                             "--sender-id", Self.senderID, "--server-key-file", keyFile,
                             "--input", inputPath, "--events", eventsPath]
            // Each run its own state directory (the default store, sqlite), unless the test chose one.
            + (extraArguments.contains("--state-dir") ? [] : ["--state-dir", directory + "/state"]) + extraArguments
        process.environment = [:]
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// The FIFO made for `--input` when no input was given.
    var fifoPath: String { directory + "/intake.fifo" }
    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    /// ccsd's stderr so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var eventsText: String { (try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? "" }
    var events: [[String: JSONValue]] {
        eventsText.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)).objectValue }
    }
    func events(_ name: String, messageID: String? = nil) -> [[String: JSONValue]] {
        events.filter { $0["event"] == .string(name) && (messageID == nil || $0["message_id"] == .string(messageID!)) }
    }

    /// Sends `sig` to ccsd by its PID and waits at most `timeout` seconds for it to exit; kills it (SIGKILL,
    /// by PID) if it does not. Returns the exit status, or nil when it had to be killed or died of a signal.
    @discardableResult
    func stop(signal sig: Int32 = SIGTERM, timeout: Double = 20) -> Int32? {
        if process.isRunning { kill(process.processIdentifier, sig) }
        return waitForExit(timeout: timeout)
    }

    /// Waits at most `timeout` seconds for ccsd to exit on its own; SIGKILL by PID after that.
    /// Returns the exit status, or nil when it had to be killed or died of a signal.
    func waitForExit(timeout: Double) -> Int32? {
        process.exitStatus(waitingAtMost: timeout)
    }

    /// Stops ccsd (if still running) and the emulator, and removes the directory.
    func cleanUp() {
        if process.isRunning { stop(signal: SIGKILL, timeout: 5) }
        killLeftoverProcesses(matching: directory)
        emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A producer writing to a FIFO as a well-behaved one does: opens it for writing without blocking (retrying
/// while no reader has it open, up to `timeout` seconds), writes each line whole, closes it.
/// Returns false if the FIFO had no reader for `timeout` seconds or a write failed.
func produce(_ lines: [String], into fifo: String, timeout: Double = 15) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    var fd: Int32 = -1
    while fd < 0 {
        fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if fd >= 0 { break }
        guard errno == ENXIO || errno == EINTR, Date() < deadline else { return false }
        usleep(10_000)
    }
    defer { close(fd) }
    for line in lines {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written > 0 {
                offset += written
            } else if (errno == EAGAIN || errno == EINTR) && Date() < deadline {
                usleep(1_000)
            } else {
                return false
            }
        }
    }
    return true
}

extension Process {
    /// Waits at most `timeout` seconds, then SIGKILLs the process by its PID. The exit status, or nil when it
    /// had to be killed or died of a signal.
    func exitStatus(waitingAtMost timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(10_000) }
        if isRunning {
            kill(processIdentifier, SIGKILL)
            waitUntilExit()
            return nil
        }
        waitUntilExit()
        return terminationReason == .exit ? terminationStatus : nil
    }
}

/// The bytes of a /proc file (at most 64 KiB), read with read(2): FoundationEssentials'
/// `FileManager.contents(atPath:)` leaks its buffer for such files (size 0 in stat), which LeakSanitizer
/// reports (docs/sanitizers.md).
func readProcFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while bytes.count < 65536 {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer[0..<count]
    }
    return bytes
}

/// SIGKILLs, by PID, every process whose command line names `marker` (a test's own temporary directory):
/// the last guard that no ccsd a test started outlives it, even if `Process.isRunning` was wrong about one
/// (seen once: two children of a passing run left behind, one holding a tmpfs mount).
func killLeftoverProcesses(matching marker: String) {
    guard !marker.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
    let own = getpid()
    for entry in entries {
        guard let pid = Int32(entry), pid != own, let data = readProcFile("/proc/\(entry)/cmdline") else { continue }
        let commandLine = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        if commandLine.contains(marker) { kill(pid, SIGKILL) }
    }
}

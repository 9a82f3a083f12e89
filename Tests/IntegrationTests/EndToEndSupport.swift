import CCS
import CCSEmulator
import Daemon
import Foundation
import Synchronization
import TLS
import XMPP

/// ccsd (the real `CCSDaemon`, intake reader and events outlet) against the emulator, over real TLS on
/// loopback, in this process. Input goes through a pipe the test writes to; events go to a file.
final class DaemonRun: Sendable {
    static let senderID = "123456789012"
    let serverKey = "e2e-key-\(UUID().uuidString)"
    let emulator: CCSEmulator
    let directory: String
    let eventsPath: String
    let inputWriter: FileHandle
    /// The pipe's read end, kept open until `cleanUp`: the reader thread opens it by its /proc path.
    private let inputReader: FileHandle
    let loop = EventLoop(label: "e2e.ccsd", backend: .epoll)
    let daemon: CCSDaemon
    private final class ExitCode: Sendable { let value = Locked<Int32?>(nil) }
    private let exitCode = ExitCode()

    /// - Parameters:
    ///   - adjustEmulator: emulator settings (two listen ports by default: primary and secondary).
    ///   - adjustDaemon: ccsd settings on top of the defaults pointed at the emulator.
    /// - Parameters:
    ///   - eventsPath: where events go (default: a file in the run's directory).
    ///   - inputPath: read input from this path instead of the pipe that `send` writes to.
    ///   - logPath: write ccsd's log (`logLevel` and up, in `logFormat`) to this file instead of errors only to stderr.
    ///   - store: `.sqlite` (default, in the run's own temporary state directory) or `.memory`.
    ///   - stateDirectory: the SQLite store's directory (default: `state` in the run's directory).
    init(key: String? = nil, exitWhenDone: Bool = true, eventsPath: String? = nil, inputPath: String? = nil,
         logPath: String? = nil, logLevel: Logger.Level = .info, logFormat: Logger.Format = .plain,
         store: Configuration.StoreKind = .sqlite, stateDirectory: String? = nil,
         emulator adjustEmulator: (inout EmulatorConfiguration) -> Void = { _ in },
         daemon adjustDaemon: (inout Configuration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "ccsd-e2e-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var emulatorConfiguration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0), .init(host: "127.0.0.1", port: 0)],
            senderID: Self.senderID, serverKey: serverKey, caDirectory: directory)
        adjustEmulator(&emulatorConfiguration)
        emulator = CCSEmulator(configuration: emulatorConfiguration)
        let ports = try emulator.start()

        var configuration = Configuration()
        configuration.senderID = Self.senderID
        configuration.serverKey = Secret(key ?? serverKey)
        configuration.primaryEndpoint = Endpoint(host: "localhost", port: ports[0])
        configuration.secondaryEndpoint = ports.count > 1 ? Endpoint(host: "localhost", port: ports[1]) : nil
        configuration.caFile = directory + "/ca.pem"
        configuration.retryBackoff = Backoff(base: 0.05, cap: 0.2)
        configuration.rateLimitBackoff = Backoff(base: 0.05, cap: 0.2)
        configuration.reconnectBackoff = Backoff(base: 0.2, cap: 1)
        configuration.store = store
        configuration.stateDirectory = stateDirectory ?? directory + "/state"
        adjustDaemon(&configuration)

        self.eventsPath = eventsPath ?? directory + "/events.jsonl"
        let pipe = Pipe()
        inputWriter = pipe.fileHandleForWriting
        let outlet = try EventOutlet(path: self.eventsPath)
        let box = exitCode
        let logger = logPath.map { Logger(minimum: logLevel, format: logFormat, fileDescriptor: open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o600)) }
            ?? Logger(minimum: .error)
        daemon = CCSDaemon(configuration: configuration, store: try configuration.openStore(), outlet: outlet, logger: logger,
                           loop: loop, exitWhenDone: exitWhenDone) { code in box.value.withLock { $0 = code } }
        inputReader = pipe.fileHandleForReading
        let reader = try IntakeReader(path: inputPath ?? "/proc/self/fd/\(inputReader.fileDescriptor)", daemon: daemon,
                                      fifoEnd: .whenWritersLeave, maxLineBytes: configuration.maxLineBytes, loop: loop)
        let daemon = daemon
        daemon.attachIntake { reader.start() }
        loop.execute { daemon.start() }
    }

    /// Writes JSON lines to ccsd's input.
    func send(_ lines: [String]) {
        inputWriter.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    func endInput() { try? inputWriter.close() }

    var exited: Int32? { exitCode.value.withLock { $0 } }

    /// The events so far, parsed.
    var events: [[String: JSONValue]] {
        guard let text = try? String(contentsOfFile: eventsPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)).objectValue }
    }

    func events(_ name: String) -> [[String: JSONValue]] { events.filter { $0["event"] == .string(name) } }

    /// message_id → how many final events it had (acked, nacked final, expired).
    var finalCounts: [String: Int] {
        var counts: [String: Int] = [:]
        for event in events {
            let name = event["event"]?.stringValue
            let isFinal = name == "acked" || name == "expired" || (name == "nacked" && event["final"] == .bool(true))
            if isFinal, let id = event["message_id"]?.stringValue { counts[id, default: 0] += 1 }
        }
        return counts
    }

    func stop() {
        endInput()
        let daemon = daemon
        if exited == nil { loop.execute { daemon.signal(.terminate) } }
        emulator.stop()
    }

    func cleanUp() {
        try? inputReader.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `count` downstream messages as legacy JSON lines, ids `prefix-0…`.
    static func messages(_ count: Int, prefix: String = "m", token: (Int) -> String = { "tok-\($0 % 37)-APA91b" }) -> [String] {
        (0..<count).map { #"{"to":"\#(token($0))","message_id":"\#(prefix)-\#($0)","data":{"n":"\#($0)"},"time_to_live":600}"# }
    }
}

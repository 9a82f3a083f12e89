import CCS
import Foundation

/// Reads downstream messages as JSON lines from a file or stdin on its own thread, validates them there
/// (off the event loop), and hands batches to the daemon in input order (issue 3 §7, "Intake").
///
/// A line that is blank is skipped; a line that is invalid becomes a `rejected` event and the rest flow on.
/// A message without a message_id gets a unique one. The reader waits while the daemon holds too many
/// outstanding messages, so memory stays bounded whatever the input size.
public final class IntakeReader: @unchecked Sendable {
    // @unchecked Sendable: after start() the fields are used only by the reader thread.
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let daemon: CCSDaemon
    private let idPrefix: String
    private var nextID = 0
    /// Longest accepted line, bytes; longer lines are rejected without being buffered whole.
    public static let maxLineBytes = 64 * 1024

    /// - Parameter path: a file, or `-` for stdin.
    /// - Throws: `ConfigurationError` when the file cannot be opened.
    public init(path: String, daemon: CCSDaemon) throws(ConfigurationError) {
        if path == "-" {
            fd = 0
            ownsDescriptor = false
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else {
                throw ConfigurationError(field: "--input", rule: "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            fd = opened
            ownsDescriptor = true
        }
        self.daemon = daemon
        var random = SystemRandomNumberGenerator()
        idPrefix = "ccsd-" + String(random.next() & 0xFFFF_FFFF, radix: 36) + "-"
    }

    /// Starts the reader thread.
    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "ccsd-intake"
        thread.start()
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var line: [UInt8] = []
        var oversized = false
        var lineNumber = 0
        var batch: [CCSDaemon.IntakeItem] = []
        let gate = DispatchSemaphore(value: 0)

        func flushBatch() {
            guard !batch.isEmpty else { return }
            let items = batch
            batch.removeAll(keepingCapacity: true)
            daemon.loop.execute { [daemon] in daemon.submit(items) { gate.signal() } }
            gate.wait()
        }

        func finishLine() {
            lineNumber += 1
            defer {
                line.removeAll(keepingCapacity: true)
                oversized = false
            }
            if oversized {
                batch.append(.invalid(line: lineNumber, messageID: nil, error: ValidationError(
                    code: .v1Format, field: "", rule: "the line is longer than \(Self.maxLineBytes) bytes")))
                return
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
            batch.append(item(for: line, lineNumber: lineNumber))
            if batch.count >= 256 { flushBatch() }
        }

        var readError: String?
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                readError = String(cString: strerror(errno))
                break
            }
            if count == 0 { break }
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                append(buffer[start..<index])
                finishLine()
                start = index + 1
            }
            append(buffer[start..<count])
            flushBatch()
        }
        if !line.isEmpty || oversized { finishLine() }
        flushBatch()
        if ownsDescriptor { close(fd) }
        daemon.loop.execute { [daemon, readError] in daemon.inputFinished(error: readError) }

        func append(_ bytes: ArraySlice<UInt8>) {
            guard !oversized else { return }
            if line.count + bytes.count > Self.maxLineBytes {
                oversized = true
                line.removeAll()
            } else {
                line.append(contentsOf: bytes)
            }
        }
    }

    private func item(for line: [UInt8], lineNumber: Int) -> CCSDaemon.IntakeItem {
        let data = Data(line)
        switch DownstreamIntake.parse(line: data, now: Date()) {
        case .success(var message):
            if message.messageID == nil {
                nextID += 1
                message = message.withMessageID(idPrefix + String(nextID))
            }
            return .message(message, line: lineNumber)
        case .failure(let error):
            // Name the message in the event when the line has a readable message_id.
            // A line Foundation refuses may still carry a readable message_id (found lexically).
            let value = try? JSONValue.parse(data)
            let messageID = value?["message_id"]?.stringValue ?? value?["message"]?["message_id"]?.stringValue
                ?? (value == nil ? JSONTokenScan.topLevelString("message_id", in: line) : nil)
            return .invalid(line: lineNumber, messageID: messageID, error: error)
        }
    }
}

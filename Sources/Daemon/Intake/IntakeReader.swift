import CCS
import Foundation

/// Reads downstream messages as JSON lines from a file, a FIFO or stdin on its own thread, validates them
/// there (off the event loop), and hands batches to the daemon in input order.
///
/// A line that is blank is skipped; a line that is invalid becomes a `rejected` event and the rest flow on.
/// A message without a message_id gets a unique one. The reader waits while the daemon holds too many
/// outstanding messages, so memory stays bounded whatever the input size.
///
/// Inputs and their end (decisions in docs/decisions.md, "Intake from a FIFO"):
/// - stdin (`-`) and regular files are read to end of file.
/// - A FIFO is opened on the reader thread, never on the caller's, so that waiting for producers holds up
///   neither signal handling nor connections. With `FIFOEnd.never` (a service) it is opened read-write:
///   ccsd is then always a writer too, so producers may open, write and close it one after another without
///   the input ever ending. With `FIFOEnd.whenWritersLeave` (`--exit-when-done`) it is opened read-only:
///   the open waits for the first producer and the input ends when no producer has it open any more.
/// - Producers must write whole lines. Lines of at most `PIPE_BUF` (4096) bytes written with one `write(2)`
///   each never interleave with other producers' lines (POSIX); longer lines from concurrent producers may,
///   and are then rejected as invalid lines.
public final class IntakeReader: @unchecked Sendable {
    // @unchecked Sendable: after start() the fields are used only by the reader thread.
    private var fd: Int32
    private let ownsDescriptor: Bool
    /// A FIFO still to be opened by the reader thread.
    private let fifoPath: String?
    private let fifoEnd: FIFOEnd
    private let daemon: CCSDaemon
    private let idPrefix: String
    private var nextID = 0
    /// Longest accepted line by default, bytes (`max_line_bytes`).
    public static let defaultMaxLineBytes = 64 * 1024
    /// Longest accepted line, bytes; longer lines are rejected (`line_too_long`, naming the limit) without
    /// being buffered whole.
    public let maxLineBytes: Int

    /// When a FIFO given as the input ends.
    public enum FIFOEnd: Sendable, Equatable {
        /// Never: a service input. The FIFO is opened read-write, so producers coming and going never end it.
        case never
        /// When the last producer has closed it (after a first one opened it): a batch input, for
        /// `--exit-when-done`. The FIFO is opened read-only.
        case whenWritersLeave
    }

    /// Checks the input and opens it, except a FIFO, which the reader thread opens (see the type's notes).
    ///
    /// Never blocks on a FIFO without producers: a FIFO is only inspected here (`stat`, access check).
    /// - Parameters:
    ///   - path: a file or FIFO, or `-` for stdin.
    ///   - fifoEnd: when a FIFO input ends; ignored for other inputs.
    ///   - maxLineBytes: the longest line accepted, bytes (`max_line_bytes`, at least 1).
    /// - Throws: `ConfigurationError` for `--input`, naming the path, when it does not exist or cannot be
    ///   opened (a FIFO: when it is not readable or, with `.never`, not writable).
    public init(path: String, daemon: CCSDaemon, fifoEnd: FIFOEnd = .never,
                maxLineBytes: Int = IntakeReader.defaultMaxLineBytes) throws(ConfigurationError) {
        precondition(maxLineBytes > 0, "maxLineBytes must be positive, got \(maxLineBytes)")
        self.fifoEnd = fifoEnd
        self.maxLineBytes = maxLineBytes
        if path == "-" {
            fd = 0
            ownsDescriptor = false
            fifoPath = nil
        } else {
            var info = stat()
            guard stat(path, &info) == 0 else { throw Self.openError(path) }
            switch info.st_mode & S_IFMT {
            case S_IFIFO:
                let mode = fifoEnd == .never ? R_OK | W_OK : R_OK
                guard faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0 else {
                    throw Self.openError(path, forWriting: fifoEnd == .never)
                }
                fd = -1
                ownsDescriptor = true
                fifoPath = path
            default:
                let opened = open(path, O_RDONLY | O_CLOEXEC)
                guard opened >= 0 else { throw Self.openError(path) }
                fd = opened
                ownsDescriptor = true
                fifoPath = nil
            }
        }
        self.daemon = daemon
        var random = SystemRandomNumberGenerator()
        idPrefix = "ccsd-" + String(random.next() & 0xFFFF_FFFF, radix: 36) + "-"
    }

    /// `--input: cannot open PATH: REASON` from `errno`.
    private static func openError(_ path: String, forWriting: Bool = false) -> ConfigurationError {
        let how = forWriting ? " for reading and writing" : ""
        return ConfigurationError(field: "--input", rule: "cannot open \(path)\(how): \(String(cString: strerror(errno)))")
    }

    /// Starts the reader thread. Call after the daemon has started: a FIFO may wait there for producers.
    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "ccsd-intake"
        thread.start()
    }

    /// Opens the FIFO on the reader thread (read-write for a service, so it never blocks; read-only for a
    /// batch, waiting for the first producer). Returns why it failed, or nil.
    private func openFIFO(_ path: String) -> String? {
        let flags = (fifoEnd == .never ? O_RDWR : O_RDONLY) | O_CLOEXEC
        while true {
            let opened = open(path, flags)
            if opened >= 0 {
                fd = opened
                return nil
            }
            if errno != EINTR { return "cannot open \(path): \(String(cString: strerror(errno)))" }
        }
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
            daemon.execute { [daemon] in daemon.submit(items) { gate.signal() } }
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
                    code: .lineTooLong, field: "", rule: "the line is longer than \(maxLineBytes) bytes (max_line_bytes)")))
                return
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
            batch.append(item(for: line, lineNumber: lineNumber))
            if batch.count >= 256 { flushBatch() }
        }

        var readError: String?
        if let fifoPath, let failure = openFIFO(fifoPath) {
            daemon.execute { [daemon] in daemon.inputFinished(error: failure) }
            return
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                readError = String(cString: strerror(errno))
                break
            }
            if count == 0 { break }
            var start = 0
            while let index = newline(in: buffer, from: start, to: count) {
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
        daemon.execute { [daemon, readError] in daemon.inputFinished(error: readError) }

        func append(_ bytes: ArraySlice<UInt8>) {
            guard !oversized else { return }
            if line.count + bytes.count > maxLineBytes {
                oversized = true
                line.removeAll()
            } else {
                line.append(contentsOf: bytes)
            }
        }
    }

    /// The index of the first LF in `buffer[start..<end]` (found by `memchr`), or nil.
    private func newline(in buffer: [UInt8], from start: Int, to end: Int) -> Int? {
        guard start < end else { return nil }
        return buffer.withUnsafeBytes { bytes in
            memchr(bytes.baseAddress! + start, 0x0A, end - start).map { $0 - UnsafeMutableRawPointer(mutating: bytes.baseAddress!) }
        }
    }

    private func item(for line: [UInt8], lineNumber: Int) -> CCSDaemon.IntakeItem {
        let item = CCSDaemon.IntakeItem.parsing(line, line: lineNumber, now: Date())
        guard case .message(let message, let line) = item, message.messageID == nil else { return item }
        nextID += 1
        return .message(message.withMessageID(idPrefix + String(nextID)), line: line)
    }
}

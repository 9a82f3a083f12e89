import CCS
import Dispatch
import FoundationEssentials
import Glibc
import TLS

/// Reads downstream messages as JSON lines from a file, a FIFO or stdin, validates them, and hands batches to
/// the daemon in input order.
///
/// Where it reads: given the daemon's event loop, a pipe or FIFO (stdin included) is read on the loop
/// (`LoopIntake`, nonblocking, a Dispatch read source): no thread wakes per batch besides the loop. A
/// regular file (always "readable", so a read source would spin), a terminal, a socket or anything else, and
/// every input without a loop, is read on a thread of its own (`ccsd-intake`) that hands each batch to the
/// loop and waits for it to be taken. Both apply the same line rules (`IntakeLines`) and the same pausing.
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
    // @unchecked Sendable: after start() the fields are used only by the reader thread (or, read on the loop,
    // only by the code that opens a FIFO, before `LoopIntake` takes over).
    private var fd: Int32
    private var ownsDescriptor: Bool
    /// A FIFO still to be opened (by the reader thread, or for the loop: see `startOnLoop`).
    private let fifoPath: String?
    private let fifoEnd: FIFOEnd
    private let daemon: CCSDaemon
    private let idPrefix: String
    /// The loop to read on, for a pipe or FIFO; nil: on the reader thread.
    private let loop: EventLoop?
    /// Bytes read at once, at most.
    static let readSize = 64 * 1024
    /// Items handed to the daemon at once, at most.
    static let batchSize = 256
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
    ///   - loop: the daemon's event loop: a pipe or FIFO is then read on it; nil: every input on a thread.
    /// - Throws: `ConfigurationError` for `--input`, naming the path, when it does not exist or cannot be
    ///   opened (a FIFO: when it is not readable or, with `.never`, not writable).
    public init(path: String, daemon: CCSDaemon, fifoEnd: FIFOEnd = .never,
                maxLineBytes: Int = IntakeReader.defaultMaxLineBytes, loop: EventLoop? = nil) throws(ConfigurationError) {
        precondition(maxLineBytes > 0, "maxLineBytes must be positive, got \(maxLineBytes)")
        self.fifoEnd = fifoEnd
        self.maxLineBytes = maxLineBytes
        var readsOnLoop = false
        if path == "-" {
            fd = 0
            ownsDescriptor = false
            fifoPath = nil
            // A pipe or FIFO on stdin is read on the loop through a file description of ccsd's own, opened
            // nonblocking (`O_NONBLOCK` on stdin's own description would change it for every process sharing
            // it). If it cannot be reopened, the thread reads stdin as it is.
            var info = stat()
            if loop != nil, fstat(0, &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
                let reopened = open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                if reopened >= 0 {
                    fd = reopened
                    ownsDescriptor = true
                    readsOnLoop = true
                }
            }
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
                readsOnLoop = loop != nil
            default:
                let opened = open(path, O_RDONLY | O_CLOEXEC)
                guard opened >= 0 else { throw Self.openError(path) }
                fd = opened
                ownsDescriptor = true
                fifoPath = nil
            }
        }
        self.daemon = daemon
        self.loop = readsOnLoop ? loop : nil
        var random = SystemRandomNumberGenerator()
        idPrefix = "ccsd-" + String(random.next() & 0xFFFF_FFFF, radix: 36) + "-"
    }

    /// `--input: cannot open PATH: REASON` from `errno`.
    private static func openError(_ path: String, forWriting: Bool = false) -> ConfigurationError {
        let how = forWriting ? " for reading and writing" : ""
        return ConfigurationError(field: "--input", rule: "cannot open \(path)\(how): \(String(cString: strerror(errno)))")
    }

    /// Starts reading (on the loop or the reader thread). Call after the daemon has started: a FIFO may wait
    /// for producers (never on the caller's thread).
    public func start() {
        if let loop {
            startOnLoop(loop)
            return
        }
        DetachedThread.start(name: "ccsd-intake") { [self] in run() }
    }

    /// Hands the input to a `LoopIntake`. A FIFO for a service is opened read-write and nonblocking at once
    /// (that never waits); one for a batch is opened read-only on a thread that only waits for the first
    /// producer (the open blocks until then), then made nonblocking (its file description is ccsd's own).
    private func startOnLoop(_ loop: EventLoop) {
        guard let fifoPath else { return handOver(to: loop) }
        if fifoEnd == .never {
            if let failure = openFIFO(fifoPath, nonblocking: true) {
                daemon.execute { [daemon] in daemon.inputFinished(error: failure) }
            } else {
                handOver(to: loop)
            }
            return
        }
        DetachedThread.start(name: "ccsd-intake") { [self] in
            if let failure = openFIFO(fifoPath, nonblocking: false) {
                daemon.execute { [daemon] in daemon.inputFinished(error: failure) }
                return
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            handOver(to: loop)
        }
    }

    /// Starts a `LoopIntake` on the open input, in a turn of the loop.
    private func handOver(to loop: EventLoop) {
        let intake = LoopIntake(fd: fd, ownsDescriptor: ownsDescriptor, daemon: daemon, loop: loop,
                                lines: IntakeLines(maxLineBytes: maxLineBytes, idPrefix: idPrefix))
        loop.execute { intake.start() }
    }

    /// Opens the FIFO (read-write for a service, so it never blocks; read-only for a batch, waiting for the
    /// first producer unless `nonblocking`). Returns why it failed, or nil.
    private func openFIFO(_ path: String, nonblocking: Bool = false) -> String? {
        let flags = (fifoEnd == .never ? O_RDWR : O_RDONLY) | O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0)
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
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        var lines = IntakeLines(maxLineBytes: maxLineBytes, idPrefix: idPrefix)
        var batch: [CCSDaemon.IntakeItem] = []
        let gate = DispatchSemaphore(value: 0)

        func flushBatch() {
            guard !batch.isEmpty else { return }
            let items = batch
            batch.removeAll(keepingCapacity: true)
            daemon.execute { [daemon] in daemon.submit(items) { gate.signal() } }
            gate.wait()
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
            while start < count {
                start += buffer.withUnsafeBytes {
                    lines.take(from: UnsafeRawBufferPointer(rebasing: $0[start..<count]), into: &batch, limit: Self.batchSize)
                }
                if batch.count >= Self.batchSize { flushBatch() }
            }
            flushBatch()
        }
        lines.finish(into: &batch)
        flushBatch()
        if ownsDescriptor { close(fd) }
        daemon.execute { [daemon, readError] in daemon.inputFinished(error: readError) }
    }
}

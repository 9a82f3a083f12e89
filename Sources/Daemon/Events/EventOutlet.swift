import FoundationEssentials
import Glibc

/// Where events go: a file descriptor (stdout or a file), one JSON line each, buffered.
///
/// Confined to the event loop. `flush()` writes everything buffered; the loop flushes after each batch
/// of work, and at once before an upstream ACK goes out, so a message is handed over before it is ACKed.
public final class EventOutlet: @unchecked Sendable {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    /// Why the last write failed (a full disk, a closed pipe); nil while every write succeeded.
    public private(set) var failure: String?

    /// - Parameter path: a file to append to, or `-` for stdout.
    /// - Throws: `ConfigurationError` when the file cannot be opened.
    public init(path: String) throws(ConfigurationError) {
        if path == "-" {
            fd = 1
            ownsDescriptor = false
            // Stdout may be a file appended to across runs (`>> FILE`, systemd's `StandardOutput=append:`).
            Self.endTornLine(fd, path: "/proc/self/fd/1")
        } else {
            let opened = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard opened >= 0 else {
                throw ConfigurationError(field: "--events", rule: "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            fd = opened
            ownsDescriptor = true
            Self.endTornLine(fd, path: path)
        }
        buffer.reserveCapacity(64 * 1024)
        Self.enlargePipe(fd)
    }

    /// When the regular file at `fd` does not end with a line feed, appends one.
    ///
    /// The kernel may end a write to a regular file early when the writer is killed (`kill -9` between two
    /// pages of one write), so a crash can leave the file's last line torn. Its events are still journaled
    /// after the file's cursor, so this run writes them again (docs/durable-core.md); the line feed keeps the
    /// torn piece a line of its own, which a reader skips as unparsable, instead of gluing it to the first line
    /// this run writes. Best effort: a file that cannot be read or written fails later, on the first flush.
    /// `fd` is open for writing to `path` (and may not be readable: the last byte is read through `path`,
    /// `/proc/self/fd/N` for an inherited descriptor); nothing is written unless the next write lands at the
    /// file's end (`O_APPEND`, or the offset there), so a descriptor at the start of an old file is left alone.
    static func endTornLine(_ fd: Int32, path: String) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return }
        let appends = fcntl(fd, F_GETFL) & O_APPEND != 0
        guard appends || lseek(fd, 0, SEEK_CUR) == info.st_size else { return }
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { return }
        defer { close(reader) }
        var last: UInt8 = 0
        guard pread(reader, &last, 1, info.st_size - 1) == 1, last != 0x0A else { return }
        var lineFeed: UInt8 = 0x0A
        _ = write(fd, &lineFeed, 1)
    }

    /// The kernel buffer asked for when the events go to a pipe: 1 MiB (Linux's default for the most an
    /// unprivileged process may ask, `/proc/sys/fs/pipe-max-size`).
    static let pipeBytes: Int32 = 1 << 20

    /// When `fd` is a pipe, asks the kernel for a buffer of `pipeBytes` (`F_SETPIPE_SZ`, fcntl(2); best effort,
    /// a refusal keeps the default 64 KiB). A flood's commit writes tens of KiB of lines at once: with 64 KiB
    /// the loop often blocked in `flush` until the reader caught up, though the reader was not slow, only
    /// a moment behind.
    private static func enlargePipe(_ fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
        let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ (Linux), not imported into Swift
        _ = fcntl(fd, setPipeSize, pipeBytes)
    }

    deinit {
        flush()
        if ownsDescriptor { close(fd) }
    }

    public func append(_ line: String) {
        buffer.append(contentsOf: line.utf8)
        if buffer.count >= 64 * 1024 { flush() }
    }

    /// Buffers one line given as UTF-8 bytes (with its trailing newline).
    public func append(utf8 line: [UInt8]) {
        buffer.append(contentsOf: line)
        if buffer.count >= 64 * 1024 { flush() }
    }

    /// Buffers the lines of one commit in one piece (`EventSink.append(utf8Lines:lineEnds:)`).
    public func append(utf8Lines bytes: [UInt8], lineEnds: [Int]) {
        if buffer.isEmpty {
            // Taken as it is, not copied (the usual case: the buffer was flushed after the previous commit).
            buffer = bytes
        } else {
            buffer.append(contentsOf: bytes)
        }
        if buffer.count >= 64 * 1024 { flush() }
    }

    /// Writes all buffered events (blocking until the descriptor takes them).
    /// - Returns: false when they could not all be written; `failure` says why. The daemon then stops,
    ///   since it can no longer hand anything over.
    @discardableResult
    public func flush() -> Bool {
        guard failure == nil else { return false }
        guard !buffer.isEmpty else { return true }
        var offset = 0
        var error: Int32 = 0
        buffer.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    error = errno
                    return
                }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
        if error != 0 {
            failure = String(cString: strerror(error))
            return false
        }
        return true
    }
}

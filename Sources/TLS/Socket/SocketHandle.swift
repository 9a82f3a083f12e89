import Dispatch
import Glibc

/// A non-blocking socket with a Dispatch read source and write source on the loop's queue.
///
/// Sources start disabled; enable them as needed. `close()` cancels both and closes the descriptor only
/// after both cancel handlers ran (libdispatch requires that), so a reused descriptor number never
/// meets a stale source. Confined to the loop.
final class SocketHandle {
    let fd: Int32
    private let readSource: DispatchSourceRead
    private let writeSource: DispatchSourceWrite
    private(set) var readEnabled = false
    private(set) var writeEnabled = false
    private(set) var isClosed = false

    /// `fd` must be non-blocking; this handle owns it from now on.
    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        writeSource = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        let pending = CancelCounter(count: 2, fd: fd)
        readSource.setCancelHandler { pending.done() }
        writeSource.setCancelHandler { pending.done() }
    }

    deinit {
        // Never release a suspended or live source.
        close()
    }

    /// Sets what runs when the socket is readable / writable (on the loop).
    func setHandlers(onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        let readable = UncheckedSendable(onReadable), writable = UncheckedSendable(onWritable)
        readSource.setEventHandler { readable.value() }
        writeSource.setEventHandler { writable.value() }
    }

    func setReadEnabled(_ enabled: Bool) {
        guard !isClosed, enabled != readEnabled else { return }
        readEnabled = enabled
        if enabled { readSource.resume() } else { readSource.suspend() }
    }

    func setWriteEnabled(_ enabled: Bool) {
        guard !isClosed, enabled != writeEnabled else { return }
        writeEnabled = enabled
        if enabled { writeSource.resume() } else { writeSource.suspend() }
    }

    /// Stops both sources and closes the descriptor (once both are cancelled). Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        readSource.setEventHandler(handler: nil)
        writeSource.setEventHandler(handler: nil)
        readSource.cancel()
        writeSource.cancel()
        // A suspended source never runs its cancel handler: resume it so it can finish cancelling.
        if !readEnabled { readSource.resume() }
        if !writeEnabled { writeSource.resume() }
        readEnabled = false
        writeEnabled = false
    }
}

/// Closes the descriptor when the last of the sources sharing it has been cancelled (all on one serial queue).
private final class CancelCounter: @unchecked Sendable {
    // @unchecked Sendable: mutated only by cancel handlers, which run on the loop's serial queue.
    private var count: Int
    private let fd: Int32
    init(count: Int, fd: Int32) { self.count = count; self.fd = fd }
    func done() {
        count -= 1
        if count == 0 { _ = Glibc.close(fd) }
    }
}

enum SocketOptions {
    static func setInt(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Creates a non-blocking, close-on-exec TCP socket for `family`.
    static func makeTCPSocket(family: Int32) -> Int32 {
        socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }
}

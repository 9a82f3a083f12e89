import Dispatch
import Glibc

/// A non-blocking socket watched by the loop for reading and writing: Dispatch read and write sources on
/// the loop's queue, or a watch of the loop's own epoll thread (`EventLoop.Backend.epoll`).
///
/// Both start disabled; enable them as needed. With Dispatch, `close()` cancels both sources and closes the
/// descriptor only after both cancel handlers ran (libdispatch requires that), so a reused descriptor
/// number never meets a stale source; with epoll it stops watching, then closes. Confined to the loop.
final class SocketHandle {
    let fd: Int32
    private let readSource: DispatchSourceRead?
    private let writeSource: DispatchSourceWrite?
    private let watch: EpollReactor.Watch?
    private(set) var readEnabled = false
    private(set) var writeEnabled = false
    private(set) var isClosed = false

    /// `fd` must be non-blocking; this handle owns it from now on.
    init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        if let reactor = loop.reactor {
            watch = reactor.watch(fd)
            readSource = nil
            writeSource = nil
            return
        }
        watch = nil
        let readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
        let writeSource = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
        let pending = CancelCounter(count: 2, fd: fd)
        readSource.setCancelHandler { pending.done() }
        writeSource.setCancelHandler { pending.done() }
        self.readSource = readSource
        self.writeSource = writeSource
    }

    deinit {
        // Never release a suspended or live source.
        close()
    }

    /// Sets what runs when the socket is readable / writable (on the loop).
    func setHandlers(onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        if let watch {
            watch.onReadable = onReadable
            watch.onWritable = onWritable
            return
        }
        let readable = UncheckedSendable(onReadable), writable = UncheckedSendable(onWritable)
        readSource?.setEventHandler { readable.value() }
        writeSource?.setEventHandler { writable.value() }
    }

    func setReadEnabled(_ enabled: Bool) {
        guard !isClosed, enabled != readEnabled else { return }
        readEnabled = enabled
        if let watch { return watch.setReading(enabled) }
        if enabled { readSource?.resume() } else { readSource?.suspend() }
    }

    func setWriteEnabled(_ enabled: Bool) {
        guard !isClosed, enabled != writeEnabled else { return }
        writeEnabled = enabled
        if let watch { return watch.setWriting(enabled) }
        if enabled { writeSource?.resume() } else { writeSource?.suspend() }
    }

    /// Stops watching and closes the descriptor (with Dispatch: once both sources are cancelled). Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if let watch {
            watch.remove()
            readEnabled = false
            writeEnabled = false
            _ = Glibc.close(fd)
            return
        }
        guard let readSource, let writeSource else { return }
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

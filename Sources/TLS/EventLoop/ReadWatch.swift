import Dispatch
import Glibc

extension EventLoop {
    /// Watches `fd` (nonblocking: a pipe, FIFO or socket) for reading: `onReadable` runs on the loop whenever
    /// it has bytes or its end to read, as long as the watch is enabled (it starts enabled). Call on the loop.
    public func watchReadable(_ fd: Int32, _ onReadable: @escaping () -> Void) -> ReadWatch {
        preconditionInEventLoop()
        return ReadWatch(loop: self, fd: fd, onReadable: onReadable)
    }
}

/// A descriptor watched for reading (`EventLoop.watchReadable`): a Dispatch read source on the loop's
/// queue, or a watch of the loop's epoll thread. Confined to the loop.
public final class ReadWatch {
    private let fd: Int32
    private let source: (any DispatchSourceRead)?
    private let watch: EpollReactor.Watch?
    private var enabled = true
    private var cancelled = false
    private var closesDescriptor = false

    init(loop: EventLoop, fd: Int32, onReadable: @escaping () -> Void) {
        self.fd = fd
        if let reactor = loop.reactor {
            let watch = reactor.watch(fd)
            watch.onReadable = onReadable
            watch.setReading(true)
            self.watch = watch
            source = nil
            return
        }
        watch = nil
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
        let handler = UncheckedSendable(onReadable)
        source.setEventHandler { handler.value() }
        self.source = source
        source.resume()
    }

    /// Stops (`false`) or resumes (`true`) calling the handler. Idempotent.
    public func setEnabled(_ on: Bool) {
        guard !cancelled, on != enabled else { return }
        enabled = on
        if let watch { return watch.setReading(on) }
        if on { source?.resume() } else { source?.suspend() }
    }

    /// Stops watching for good, and closes the descriptor if `closing` (with Dispatch: once the source is
    /// cancelled, as libdispatch requires). Idempotent.
    public func cancel(closing: Bool) {
        guard !cancelled else { return }
        cancelled = true
        if let watch {
            watch.remove()
            if closing { _ = Glibc.close(fd) }
            return
        }
        guard let source else { return }
        let fd = fd
        source.setEventHandler(handler: nil)
        source.setCancelHandler { if closing { _ = Glibc.close(fd) } }
        source.cancel()
        if !enabled { source.resume() }  // a suspended source never finishes cancelling
    }
}

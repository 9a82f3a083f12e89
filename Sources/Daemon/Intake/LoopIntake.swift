import CCS
import Dispatch
import FoundationEssentials
import Glibc
import TLS

/// Reads the intake from a nonblocking pipe or FIFO on the event loop (`EventLoop.watchReadable`), for `IntakeReader`: no thread of its own, so a message costs no wake-up of a reader thread and no
/// hand-over to the loop and back (a semaphore per batch).
///
/// The same rules as the reader thread, from the same code: lines through `IntakeLines`, batches of
/// `IntakeReader.batchSize` handed to `CCSDaemon.submit`, the next batch only once the daemon called the
/// last one's `resume` (reading stops meanwhile: the source is suspended, and bytes already read wait here),
/// the end of the input reported after the last batch was taken. A turn reads at most one buffer (64 KiB) and
/// reads on in a later turn (`continueLater`), so a producer that writes faster than ccsd sends cannot hold
/// the loop.
///
/// Confined to the loop once `start()` runs.
final class LoopIntake: @unchecked Sendable {
    // @unchecked Sendable: every field is touched only on the loop (the source's handlers run there).
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let daemon: CCSDaemon
    private let loop: EventLoop
    private var lines: IntakeLines
    private var batch: [CCSDaemon.IntakeItem] = []
    /// Bytes read and not yet taken into lines: `buffer[taken..<filled]`.
    private let buffer: UnsafeMutableRawBufferPointer
    private var taken = 0
    private var filled = 0
    private var source: ReadWatch?
    /// Waiting for the daemon to call the last batch's `resume`; the source is suspended meanwhile.
    private var paused = false
    /// Inside `daemon.submit`: a `resume` called now lets reading go on at once.
    private var submitting = false
    private var resumedWhileSubmitting = false
    /// The input ended (nil) or failed to read (why), once known; reported after the last batch.
    private var ending: String??
    private var finished = false
    /// A turn of `pump()` is posted (`continueLater`).
    private var continuing = false

    /// - Parameters:
    ///   - fd: a pipe or FIFO opened with `O_NONBLOCK` on an open file description of ccsd's own.
    ///   - ownsDescriptor: close `fd` once the input ended.
    init(fd: Int32, ownsDescriptor: Bool, daemon: CCSDaemon, loop: EventLoop, lines: IntakeLines) {
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
        self.daemon = daemon
        self.loop = loop
        self.lines = lines
        buffer = .allocate(byteCount: IntakeReader.readSize, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Starts reading. Call on the loop.
    func start() {
        loop.preconditionInEventLoop()
        source = loop.watchReadable(fd) { [self] in pump() }
    }

    /// Takes what was read, reads once more if all was taken, and hands batches over until the daemon pauses
    /// intake, the input would block, or it ended.
    private func pump() {
        guard !finished else { return }
        var readsLeft = 1
        while !paused {
            if taken < filled {
                taken += lines.take(from: UnsafeRawBufferPointer(start: buffer.baseAddress! + taken, count: filled - taken),
                                    into: &batch, limit: IntakeReader.batchSize)
                if batch.count >= IntakeReader.batchSize || taken == filled { submit() }
                continue
            }
            if let ending {
                finish(error: ending)
                return
            }
            guard readsLeft > 0 else { return continueLater() }
            readsLeft -= 1
            let count = read(fd, buffer.baseAddress!, buffer.count)
            if count > 0 {
                taken = 0
                filled = count
                continue
            }
            if count < 0, errno == EINTR {
                readsLeft += 1
                continue
            }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            ending = .some(count == 0 ? nil : String(cString: strerror(errno)))
            lines.finish(into: &batch)
            submit()
        }
    }

    /// Reads on in a later turn, after what is queued on the loop (acks, timers): until a read would block
    /// or the input ends, ccsd reads on without waiting for the read source. Its readiness events alone are
    /// not enough: Dispatch merges them while the handler runs or the source is suspended, and stops
    /// watching a pipe once it reported its end, so a pipe whose last data and end came in one event would
    /// never be read to its end. A turn posted from the loop wakes no thread. On the epoll loop, whose watch is
    /// level-triggered, ending the turn after a short read and waiting for the watch was measured: half the
    /// intake reads when paced, but a 1,000-connection flood fell from about 60,000 to 33,000 msgs/s (each
    /// of its turns is long, so the intake fell behind the windows). Not taken.
    private func continueLater() {
        guard !continuing else { return }
        continuing = true
        loop.execute { [self] in
            continuing = false
            pump()
        }
    }

    /// Hands the batch to the daemon; pauses reading unless the daemon lets intake go on at once.
    private func submit() {
        guard !batch.isEmpty else { return }
        let items = batch
        batch.removeAll(keepingCapacity: true)
        submitting = true
        resumedWhileSubmitting = false
        daemon.submit(items) { [self] in resumed() }
        submitting = false
        if !resumedWhileSubmitting {
            paused = true
            source?.setEnabled(false)
        }
    }

    /// The daemon's `resume` for the last batch (on the loop). Reading goes on in a turn of its own, as the
    /// reader thread's next batch would: never inside the daemon's call that resumed it.
    private func resumed() {
        if submitting {
            resumedWhileSubmitting = true
            return
        }
        loop.execute { [self] in
            guard paused else { return }
            paused = false
            source?.setEnabled(true)
            pump()
        }
    }

    private func finish(error: String?) {
        finished = true
        source?.cancel(closing: ownsDescriptor)
        daemon.inputFinished(error: error)
    }
}

import Daemon

/// An `EventSink` in memory: `lines` holds what was flushed, `buffered` what was appended since. Told to
/// fail (`failNextFlush`), it refuses that flush and every later one, like a full disk or a closed pipe.
public final class MemoryOutlet: EventSink, @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, on the test's own task.
    public private(set) var lines: [String] = []
    public private(set) var buffered: [String] = []
    public private(set) var flushes = 0
    public private(set) var failure: String?
    private var pendingFailure: String?

    public init() {}

    public func append(_ line: String) {
        buffered.append(line)
    }

    @discardableResult
    public func flush() -> Bool {
        flushes += 1
        if let pendingFailure {
            failure = pendingFailure
            self.pendingFailure = nil
        }
        guard failure == nil else { return false }
        lines += buffered
        buffered.removeAll()
        return true
    }

    /// Makes the next flush (and every one after it) fail with `reason`; what is buffered is not written.
    public func failNextFlush(reason: String = "No space left on device") {
        pendingFailure = reason
    }
}

import Foundation

/// A value guarded by a lock, with the shape of `Synchronization.Mutex` (`withLock` hands the value over
/// `inout`), on an `NSLock` (a pthread mutex). ThreadSanitizer intercepts pthread mutexes but not the futex of
/// `Mutex`, whose code lives in the uninstrumented standard library: state guarded by a `Mutex` was reported
/// as raced in TSan runs (docs/sanitizers.md). Use this for state shared across threads.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value while holding the lock; returns what `body` returns. Rethrows what `body` throws.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

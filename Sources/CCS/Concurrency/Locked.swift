import Glibc

/// A value guarded by a lock, with the shape of `Synchronization.Mutex` (`withLock` hands the value over
/// `inout`), on a pthread mutex. ThreadSanitizer intercepts pthread mutexes but not the futex of `Mutex`, whose
/// code lives in the uninstrumented standard library: state guarded by a `Mutex` was reported as raced in TSan
/// runs (docs/sanitizers.md). Use this for state shared across threads.
public final class Locked<Value>: @unchecked Sendable {
    /// Allocated once and never moved: a pthread mutex must keep its address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Guarded by `mutex`.
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock; returns what `body` returns. Rethrows what `body` throws.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

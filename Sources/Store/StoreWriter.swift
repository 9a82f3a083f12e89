import CCS
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Group commit: takes the store operations of a loop turn and commits them as one transaction on its own
/// serial queue, so disk writes never run on the event loop (issue 8).
///
/// - The driver calls `enqueue…` on the loop. The first operation of a turn posts an end-of-turn flush through
///   `execute` (it runs after the turn's other work); `maxOperations` pending operations flush at once.
/// - The end-of-turn flush hands the turn's operations to the writer's queue (`Mailbox`). The writer commits
///   what it was handed, then at once everything handed to it meanwhile, as one batch: it never waits for the
///   loop to take a result before it starts the next commit. (It did: a commit's result went to the loop,
///   and the loop sent the next batch back, two thread wake-ups per commit, about a third of the writer's
///   time idle in a flood.) Results come back on the loop (through `execute`) as `Report`s, in commit order.
///   Between two commits the writer's queue runs any `read` queued meanwhile.
/// - A retryable failure (disk full, database busy): the batch's inserts are answered `.failed` at once
///   (`insertsFailed`; their submitters get a retryable rejection instead of waiting for the disk), the rest
///   (events and progress of accepted messages) is retried with `retryDelay` backoff together with whatever
///   arrived meanwhile (or, if nothing is left, an empty probe commit), and `unavailable` is reported for each
///   failed try until one succeeds (`available`). Inserts enqueued while unavailable are answered `.failed`.
/// - A fatal failure (corrupt, I/O error, read-only, …) is reported once (`fatal`); the batch's inserts are
///   answered `.failed`, and the writer takes nothing more (the daemon stops with exit 5).
///
/// Threading: the queueing state is confined to the loop (every public call and every `execute`d closure run
/// there); the store is used only on the writer's queue. Hence `@unchecked Sendable`.
///
/// A store that never blocks (the in-memory one; `Configuration.commitsOnLoop`) is committed and read on the
/// loop itself, at the same points (the end-of-turn flush, `read`), with the results still posted through
/// `execute` as a later turn, in the same order: the hop to the writer's thread and back cost two thread
/// wake-ups per commit, more than the commit itself (a paced run commits every few messages).
public final class StoreWriter: @unchecked Sendable {
    public enum Report: Sendable, Equatable {
        /// A batch committed: persisted inserts and journaled events, in order.
        case committed(StoreCommitResult)
        /// Inserts not stored because the store failed: each `.failed(reason:)`.
        case insertsFailed([PersistResult])
        /// A retryable failure; the writer retries after backoff.
        case unavailable(StoreError)
        /// A commit succeeded after `unavailable`.
        case available
        /// A failure that means the store cannot keep what it has; the writer stopped.
        case fatal(StoreError)
    }

    public struct Configuration: Sendable {
        /// Pending operations that trigger a commit before the turn ends. Default 1000.
        public var maxOperations: Int
        /// First retry delay after a retryable failure. Default 1 s.
        public var retryBase: Duration
        /// Longest retry delay. Default 30 s.
        public var retryCap: Duration
        /// Whether commits and reads run on the loop instead of the writer's queue: only for a store that never
        /// blocks. Default nil: true for `InMemoryMessageStore`, false for any other store (SQLite writes to disk).
        public var commitsOnLoop: Bool?

        public init(maxOperations: Int = 1000, retryBase: Duration = .seconds(1), retryCap: Duration = .seconds(30),
                    commitsOnLoop: Bool? = nil) {
            self.maxOperations = maxOperations
            self.retryBase = retryBase
            self.retryCap = retryCap
            self.commitsOnLoop = commitsOnLoop
        }
    }

    private enum State {
        case running
        /// Retryable failures in a row; the retry batch waits for its delay.
        case unavailable(failures: Int, retry: StoreBatch, retryPending: Bool)
        case fatal
        case closed
    }

    private let store: StoreBox
    private let configuration: Configuration
    private let now: @Sendable () -> Int64
    private let execute: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let report: (Report) -> Void
    private let queue = DispatchQueue(label: "ccsd.store-writer")
    /// Commits and reads run on the loop (`Configuration.commitsOnLoop`).
    public let commitsOnLoop: Bool

    // Loop-confined state. What every enqueue touches is marked `@exclusivity(unchecked)`: a runtime
    // exclusivity check per access cost about 120 instructions, three enqueues per message. Its accesses never
    // overlap: they run on the loop only, each ends before `report`, `execute` or a flush is called, and
    // no access is held across a call out of the writer.
    @exclusivity(unchecked) private var pending = StoreBatch()
    @exclusivity(unchecked) private var flushScheduled = false
    /// A commit started by `start` is in flight (the in-memory store's commits, and retries).
    private var inFlight = false
    /// Hand-offs to the writer's queue not yet answered by `finished`.
    private var unfinishedHandOffs = 0
    /// What the loop handed to the writer's queue and the writer has not taken yet, shared by the two threads.
    private let mailbox = Mutex(Mailbox())
    @exclusivity(unchecked) private var state = State.running
    private var closeCompletion: (() -> Void)?
    private var closedCompletion: (() -> Void)?
    /// Commits attempted (successful or not), for tests and diagnostics. Read it on the loop.
    public private(set) var commitCount = 0
    /// Seconds each commit took on the writer's queue (successful or not), for the service's metrics. Read it
    /// on the loop.
    public private(set) var commitLatency = Histogram(bounds: Histogram.commitLatencyBounds)

    /// - Parameters:
    ///   - store: used only on the writer's queue from now on (after `load`, which the owner calls first).
    ///   - now: the wall clock in milliseconds since 1970 (journal times, retention).
    ///   - execute: posts a closure to the event loop, to run after the current turn; called from the loop and
    ///     from the writer's queue, so it must be thread-safe (as `DispatchQueue.async` is).
    ///   - report: called on the loop with every outcome.
    public init(store: any MessageStore, configuration: Configuration = Configuration(),
                now: @escaping @Sendable () -> Int64 = StoreWriter.wallClockMillis,
                execute: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                report: @escaping (Report) -> Void) {
        self.store = StoreBox(store)
        self.configuration = configuration
        self.commitsOnLoop = configuration.commitsOnLoop ?? (store is InMemoryMessageStore)
        self.now = now
        self.execute = execute
        self.report = report
    }

    /// Milliseconds since 1970 from `CLOCK_REALTIME`.
    public static let wallClockMillis: @Sendable () -> Int64 = {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// The delay before retry number `failures` (1-based) after retryable failures:
    /// `min(retryBase · 2^(failures−1), retryCap)`. With the defaults: 1, 2, 4, 8, 16, 30, 30, … s.
    public static func retryDelay(failures: Int, base: Duration, cap: Duration) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        let delay = base * (1 << exponent)
        return delay < cap ? delay : cap
    }

    // MARK: - Loop side

    /// Queues a newly submitted message (answered in `committed(…).persisted`, or `insertsFailed`).
    public func enqueue(_ insert: consuming StoreBatch.Insert) {
        switch state {
        case .running:
            pending.insert(consume insert)
            pendingChanged()
        case .unavailable:
            let reason = "the store is unavailable"
            let failed = [PersistResult(messageID: insert.record.messageID, line: insert.line,
                                             outcome: .failed(reason: reason))]
            execute { [self] in report(.insertsFailed(failed)) }
        case .fatal, .closed:
            return
        }
    }

    /// Queues an event to journal (answered in `committed(…).journaled` / `recordedThrough`).
    public func enqueue(_ record: consuming StoreBatch.Record) {
        guard accepting else { return }
        pending.record(consume record)
        pendingChanged()
    }

    /// Queues new attempt counters of a live message (not answered; the last one per message wins).
    public func enqueueProgress(_ record: consuming MessageRecord) {
        guard accepting else { return }
        pending.progress(consume record)
        pendingChanged()
    }

    /// Records that `consumer` has every journaled event up to `seq`. Lazy: it rides on the next commit (or
    /// the one at `close`) and starts none of its own, so acknowledging what a commit journaled costs no
    /// extra transaction. A cursor lost in a crash only means those events are delivered again.
    public func acknowledgeEvents(consumer: String, through seq: Int64) {
        guard accepting else { return }
        pending.acknowledgeEvents(consumer: consumer, through: seq)
    }

    /// Commits what is pending, then closes the store on its queue and calls `completion` on the loop.
    /// While the store is unavailable or after a fatal error, what is not committed is dropped: it was not
    /// acknowledged to anyone (a restart resends or redelivers it).
    public func close(_ completion: @escaping () -> Void) {
        switch state {
        case .closed: return
        case .running:
            closeCompletion = completion
            flush()
            finishCloseIfIdle()
        case .unavailable, .fatal:
            closeCompletion = completion
            pending = StoreBatch()
            state = .closed
            finishCloseIfIdle()
        }
    }

    private var accepting: Bool {
        switch state {
        case .running, .unavailable: true
        case .fatal, .closed: false
        }
    }

    private func pendingChanged() {
        if pending.count >= configuration.maxOperations {
            flush()
        } else if !flushScheduled {
            flushScheduled = true
            execute { [self] in
                flushScheduled = false
                flush()
            }
        }
    }

    /// Reads from the store on the writer's queue (after the commits started before it; serial with them) and
    /// answers on the loop. For the service's queries: events after a cursor, a message's stored state.
    /// Call on the loop. Once the store is closed, `work` does not run and `completion` gets `closedError`.
    /// - Parameters:
    ///   - work: runs on the writer's queue with the store; may throw `StoreError`.
    ///   - completion: runs on the loop with the result.
    public func read<T: Sendable>(_ work: @escaping @Sendable (any MessageStore) throws(StoreError) -> T,
                                  completion: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        if case .closed = state {
            completion(.failure(StoreWriter.closedError))
            return
        }
        let store = self.store
        let execute = self.execute
        let body: @Sendable () -> Void = {
            let result: Result<T, StoreError>
            do throws(StoreError) {
                result = .success(try work(store.store))
            } catch {
                result = .failure(error)
            }
            execute { completion(result) }
        }
        if commitsOnLoop { body() } else { queue.async(execute: body) }
    }

    /// What `read` answers once the store is closed.
    public static let closedError = StoreError(code: .other, path: "", operation: "read", message: "the store is closed")

    /// Starts a commit of what is pending, unless one is in flight or a retry is waiting for its delay.
    /// Pending consumer cursors alone start no commit (they ride on the next one), except when closing.
    private func flush() {
        guard case .running = state, !pending.isEmpty else { return }
        guard pending.count > 0 || closeCompletion != nil else { return }
        if commitsOnLoop {
            guard !inFlight else { return }
            let batch = pending
            // Sized like the batch it follows: a turn's operations (and the progress index) grow no storage.
            pending = StoreBatch(reservingCapacity: min(batch.count, configuration.maxOperations))
            start(batch)
        } else {
            handOff()
        }
    }

    /// Hands what is pending to the writer's queue: into the mailbox, merged after what the writer has not
    /// taken yet; starts the writer if it is idle. Not while it is halted by a failed commit.
    private func handOff() {
        var batch = StoreBatch(reservingCapacity: min(pending.count, configuration.maxOperations))
        swap(&batch, &pending)
        unfinishedHandOffs += 1
        let startWriter = mailbox.withLock { box -> Bool in
            if box.handOffs == 0 { box.batch = batch } else { box.batch.append(contentsOf: batch) }
            box.handOffs += 1
            guard !box.writing, !box.halted else { return false }
            box.writing = true
            return true
        }
        if startWriter { queue.async { [self] in commitHandedOver() } }
    }

    /// On the writer's queue: commits everything handed over so far as one batch, then queues itself again
    /// (so a `read` queued meanwhile runs between two commits) until the mailbox is empty. After a failed
    /// commit it halts and takes nothing more: the loop takes back what was handed over after the failed
    /// batch (`reclaimHandedOver`) and resumes the writer once the store is available again.
    private func commitHandedOver() {
        let taken = mailbox.withLock { box -> (batch: StoreBatch, handOffs: Int)? in
            guard box.handOffs > 0, !box.halted else {
                box.writing = false
                return nil
            }
            var batch = StoreBatch()
            swap(&batch, &box.batch)
            defer { box.handOffs = 0 }
            return (batch, box.handOffs)
        }
        guard let (batch, handOffs) = taken else { return }
        let (result, elapsed) = commitNow(batch)
        if case .failure = result {
            mailbox.withLock { box in
                box.halted = true
                box.writing = false
            }
        } else {
            queue.async { [self] in commitHandedOver() }
        }
        execute { [self] in finished(batch, result, elapsed: elapsed, handOffs: handOffs) }
    }

    /// Commits `batch` on the calling thread (the writer's queue, or the loop for the in-memory store).
    private func commitNow(_ batch: StoreBatch) -> (Result<StoreCommitResult, StoreError>, Duration) {
        let result: Result<StoreCommitResult, StoreError>
        let started = ContinuousClock.now
        do throws(StoreError) {
            result = .success(try store.store.commit(batch, nowUnixMillis: now()))
        } catch {
            result = .failure(error)
        }
        return (result, started.duration(to: .now))
    }

    /// After a failed commit: what was handed to the writer after the failed batch comes back in front of
    /// what is pending, as if it had never been handed over (the writer halted at the failure and took none
    /// of it), and the writer stays halted.
    private func reclaimHandedOver() {
        guard !commitsOnLoop else { return }
        let (held, handOffs) = mailbox.withLock { box -> (StoreBatch, Int) in
            box.halted = true
            var batch = StoreBatch()
            swap(&batch, &box.batch)
            defer { box.handOffs = 0 }
            return (batch, box.handOffs)
        }
        unfinishedHandOffs -= handOffs
        guard handOffs > 0 else { return }
        var merged = held
        merged.append(contentsOf: pending)
        pending = merged
    }

    /// Starts one commit of `batch` by itself: the in-memory store's commits (on the loop), and retries.
    private func start(_ batch: StoreBatch) {
        inFlight = true
        let body: @Sendable () -> Void = { [self] in
            let (result, elapsed) = commitNow(batch)
            execute { [self] in finished(batch, result, elapsed: elapsed, handOffs: 0) }
        }
        // On the loop: the result still comes back as a later turn (through `execute`), as from the queue.
        if commitsOnLoop { body() } else { queue.async(execute: body) }
    }

    /// On the loop: a commit's outcome. `handOffs` is how many hand-offs the batch answers (0: started by
    /// `start`).
    private func finished(_ batch: StoreBatch, _ result: Result<StoreCommitResult, StoreError>, elapsed: Duration,
                          handOffs: Int) {
        if handOffs > 0 { unfinishedHandOffs -= handOffs } else { inFlight = false }
        commitCount += 1
        let (seconds, attoseconds) = elapsed.components
        commitLatency.observe(Double(seconds) + Double(attoseconds) / 1e18)
        switch result {
        case .success(let committed):
            if case .unavailable = state {
                state = .running
                if !commitsOnLoop { mailbox.withLock { $0.halted = false } }
                report(.available)
            }
            report(.committed(committed))
            if !flushScheduled { flush() }
        case .failure(let error):
            reclaimHandedOver()
            let inserts = batch.inserts
            if !inserts.isEmpty {
                report(.insertsFailed(inserts.map {
                    PersistResult(messageID: $0.record.messageID, line: $0.line,
                                       outcome: .failed(reason: error.description))
                }))
            }
            if case .closed = state {
                // Closing: nothing more is tried.
            } else if error.retryable {
                var failures = 1
                if case .unavailable(let previous, _, _) = state { failures = previous + 1 }
                state = .unavailable(failures: failures, retry: batch.withoutInserts, retryPending: true)
                report(.unavailable(error))
                let delay = StoreWriter.retryDelay(failures: failures, base: configuration.retryBase,
                                                   cap: configuration.retryCap)
                queue.asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    execute { [self] in retry() }
                }
            } else {
                state = .fatal
                pending = StoreBatch()
                report(.fatal(error))
            }
        }
        finishCloseIfIdle()
    }

    /// After a retry delay: the remaining batch plus what arrived meanwhile (an empty batch is a probe).
    private func retry() {
        guard case .unavailable(let failures, var batch, true) = state, !inFlight else { return }
        batch.append(contentsOf: pending.withoutInserts)
        let lateInserts = pending.inserts
        pending = StoreBatch()
        if !lateInserts.isEmpty {
            report(.insertsFailed(lateInserts.map {
                PersistResult(messageID: $0.record.messageID, line: $0.line,
                                   outcome: .failed(reason: "the store is unavailable"))
            }))
        }
        state = .unavailable(failures: failures, retry: StoreBatch(), retryPending: false)
        start(batch)
    }

    private func finishCloseIfIdle() {
        guard let completion = closeCompletion, !inFlight, unfinishedHandOffs == 0 else { return }
        if case .running = state, !pending.isEmpty { return }
        closeCompletion = nil
        closedCompletion = completion
        state = .closed
        let store = self.store
        let body: @Sendable () -> Void = { [self] in
            store.store.close()
            execute { [self] in
                let completion = closedCompletion
                closedCompletion = nil
                completion?()
            }
        }
        if commitsOnLoop { body() } else { queue.async(execute: body) }
    }
}

/// What the loop handed to the writer's queue and the writer has not taken yet (`StoreWriter.mailbox`).
private struct Mailbox {
    /// The next commit: every batch handed over since the writer took the last one, in order.
    var batch = StoreBatch()
    /// Hand-offs merged into `batch`.
    var handOffs = 0
    /// The writer's queue holds or runs `commitHandedOver`.
    var writing = false
    /// A commit failed: the writer takes nothing until the store is available again.
    var halted = false
}

/// The store, handed to the writer's queue (used there only).
private final class StoreBox: @unchecked Sendable {
    let store: any MessageStore
    init(_ store: any MessageStore) { self.store = store }
}

extension Duration {
    /// As `DispatchTimeInterval` (nanoseconds).
    fileprivate var timeInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}

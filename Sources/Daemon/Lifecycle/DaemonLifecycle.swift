/// The daemon's service lifecycle as a pure state machine: it starts the parts in order (store → pool →
/// intake), stops them in reverse within bounded time, and decides the exit code. Events in, actions out;
/// time comes in as a `ContinuousClock.Instant`, so tests step it. It replaces `CCSDaemon`'s flags
/// (`inputEnded`, `inputFailed`, `finishing`, `closing`, `outletBroken`, `exitCode`) and its hard-coded
/// 3 s and 1 s bounds.
///
///     idle ──start──▶ starting(store) ─▶ starting(pool) ─▶ starting(intake) ─▶ running
///                                                                                 │ signal, done, input error
///     failure (authentication 3, outlet 4, store 5, start) ───────────┐           ▼
///                                                                     │   stopping(grace deadline)
///                                                                     ▼           │ nothing left to wait for, grace over
///                                                       closing(close deadline) ◀─┘
///                                                                     │ connections closed, deadline
///                                                                     ▼
///                                                              stopped(exit code)
///
/// - **Graceful stop** (SIGTERM/SIGINT; `--exit-when-done` once done; an input read error once done):
///   intake closes; `stopping` waits up to `shutdownGrace` for messages on the wire (durable store) or for
///   every outstanding message (memory store) to become final. When the grace runs out, a durable store keeps
///   what is not final (it is resent after the restart: no `SHUTDOWN` nacks); the memory store ends it with
///   `abandonOutstanding` (`nacked` `SHUTDOWN`), since it would be lost. Then `closing`.
/// - **Failure stop** (authentication, events outlet, store fatal, a part failing to start): no grace, since
///   nothing more can be sent or handed over; straight to `closing` with `failureCloseTimeout`.
/// - **closing**: the streams close; once the pool reports them closed, or the deadline passes (then they are
///   aborted), the store is flushed and closed, and the process exits.
///
/// A part that fails to start stops the parts already started, in reverse. A stop requested while a part is
/// starting waits for that part to report (started or failed), then stops what started.
///
/// Exit codes (`ExitCode`): 0 done or stopped by a signal; 1 the input could not be read; 2 configuration
/// (a part could not start for a reason the operator must fix, e.g. an unreadable input file); 3
/// authentication failed; 4 the events outlet failed; 5 the store failed and cannot keep what it has. The
/// first failure decides the code; a failure after a graceful stop began replaces a 0.
///
/// Not thread-safe: confined to the daemon's loop, like its driver.
public struct DaemonLifecycle: Sendable {
    public typealias Instant = ContinuousClock.Instant

    /// The parts, in start order; they stop in reverse.
    public enum Part: Int, Sendable, Equatable, Comparable, CaseIterable, CustomStringConvertible {
        /// The message store (opened and loaded first: the pool resumes what it holds).
        case store
        /// The dispatcher and its connections.
        case pool
        /// The source of downstream messages (stdin, a file, a FIFO; later the HTTP API).
        case intake

        public static func < (a: Part, b: Part) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["store", "pool", "intake"][rawValue] }

        /// The exit code when this part cannot start: a store that cannot be opened cannot keep anything
        /// (5); the others fail for a configuration reason (2).
        var startFailureExit: ExitCode { self == .store ? .storeFailed : .configuration }
    }

    /// The process exit code (documented in `RunOptions.usage` and the README).
    public enum ExitCode: Int32, Sendable, Equatable, CustomStringConvertible {
        /// Done (`--exit-when-done`) or stopped by SIGTERM/SIGINT.
        case done = 0
        /// The input could not be read.
        case inputFailed = 1
        /// Usage or configuration: something the operator must fix before a restart helps.
        case configuration = 2
        /// Authentication failed (SASL): a configuration error; systemd must not restart (it would hammer CCS).
        case authenticationFailed = 3
        /// The events outlet failed: nothing more can be handed over.
        case outletFailed = 4
        /// The store failed and cannot keep what it has (corrupt, I/O error, read-only).
        case storeFailed = 5

        public var description: String { "\(rawValue)" }
    }

    /// Whether what is accepted survives the process.
    public enum StoreDurability: Sendable, Equatable {
        /// SQLite: what is not final at the end of the grace stays stored and is resent after a restart.
        case durable
        /// In memory: what is not final at the end of the grace ends `nacked` `SHUTDOWN`.
        case memory
    }

    /// Bounds and mode.
    public struct Configuration: Sendable, Equatable {
        /// How long a graceful stop waits for messages to become final (`shutdown_grace_seconds`, 10 s).
        public var shutdownGrace: Duration
        /// How long the streams get to close after a graceful stop before they are aborted
        /// (`close_timeout_seconds`, 3 s): time for the server's `</stream:stream>` and late acks.
        public var closeTimeout: Duration
        /// The same bound after a failure (authentication, outlet, store, start): nothing can be sent or
        /// handed over any more, so only a polite close (`failure_close_timeout_seconds`, 1 s).
        public var failureCloseTimeout: Duration
        /// `--exit-when-done`: stop once the input ended and no stored message is outstanding.
        public var exitWhenDone: Bool
        public var durability: StoreDurability

        public init(shutdownGrace: Duration = .seconds(10), closeTimeout: Duration = .seconds(3),
                    failureCloseTimeout: Duration = .seconds(1), exitWhenDone: Bool = false,
                    durability: StoreDurability = .durable) {
            self.shutdownGrace = shutdownGrace
            self.closeTimeout = closeTimeout
            self.failureCloseTimeout = failureCloseTimeout
            self.exitWhenDone = exitWhenDone
            self.durability = durability
        }
    }

    /// A signal that asks for a graceful stop.
    public enum Signal: Sendable, Equatable, CustomStringConvertible {
        case terminate, interrupt
        public var description: String { self == .terminate ? "SIGTERM" : "SIGINT" }
    }

    /// What the driver should do, in order.
    public enum Action: Sendable, Equatable {
        /// Open and load the store; answer `partStarted(.store)` or `partFailed(.store, reason:)`.
        case startStore
        /// Start the dispatcher (restoring what the store loaded) and open connections; answer likewise.
        case startPool
        /// Start reading downstream messages; answer likewise.
        case startIntake
        /// Take no more messages; the intake source may stay open (a FIFO), but nothing more is submitted.
        case closeIntake
        /// Memory store only: end every outstanding message `nacked` `SHUTDOWN` (`Dispatcher.abandonOutstanding`).
        case abandonOutstanding
        /// Close every stream politely (`Dispatcher.shutdown`); answer `connectionsClosed` once none is open.
        case closeStreams
        /// The close deadline passed: abort the streams still open.
        case abortStreams
        /// Commit what is pending and write its journaled events out (skipped after a store failure).
        case flushStore
        /// Close the store (release its lock).
        case closeStore
        /// Call `timerFired(now:)` at `deadline` (or later). One timer at a time: this replaces the previous.
        case scheduleTimer(at: Instant)
        /// End the process with this code. Always the last action.
        case exit(ExitCode)
        /// A line for the log.
        case log(LifecycleLog)
    }

    /// The state. "Can transition to" lists the only legal next states.
    public enum State: Sendable, Equatable {
        /// Not started. Can transition to: `starting`, `stopped` (a signal before start).
        case idle
        /// Waiting for `part` to report. `stop` is a stop requested meanwhile, carried out once `part`
        /// reports. Can transition to: `starting` (next part), `running`, `stopping`, `closing`, `stopped`.
        case starting(Part, stop: PendingStop?)
        /// Every part started. Can transition to: `stopping`, `closing`.
        case running
        /// Intake closed; waiting up to `graceDeadline` for messages to become final.
        /// Can transition to: `closing`.
        case stopping(graceDeadline: Instant, exit: ExitCode)
        /// Streams closing; waiting for `connectionsClosed` up to `deadline`. Can transition to: `stopped`.
        case closing(deadline: Instant, exit: ExitCode)
        /// Exited. Final: later events are ignored (a stale timer, a late callback).
        case stopped(ExitCode)
    }

    /// A stop requested while a part was starting.
    public struct PendingStop: Sendable, Equatable {
        public var exit: ExitCode
        /// A failure (no grace) rather than a graceful stop.
        public var failure: Bool

        public init(exit: ExitCode, failure: Bool) {
            self.exit = exit
            self.failure = failure
        }
    }

    /// The bounds of the stop; a reload replaces them for the next stop.
    public internal(set) var configuration: Configuration
    public private(set) var state: State = .idle
    /// Parts that started, in start order.
    public private(set) var started: [Part] = []
    /// Stored messages not yet final, and those of them on the wire (last `outstandingChanged`).
    public private(set) var outstanding = 0
    public private(set) var inFlight = 0
    public private(set) var inputEnded = false
    /// Why reading the input failed, if it did: the run then exits 1.
    public private(set) var inputError: String?
    /// The store failed: it is not flushed on the way out.
    private var storeBroken = false

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: Events

    /// Begins: starts the store.
    public mutating func start(now: Instant) -> [Action] {
        guard case .idle = state else { invalid("start") }
        state = .starting(.store, stop: nil)
        return [.log(.info("starting", ["part": "store"])), .startStore]
    }

    /// `part` started: start the next one, or run, or carry out a stop requested meanwhile.
    public mutating func partStarted(_ part: Part, now: Instant) -> [Action] {
        guard case .starting(let pending, let stop) = state, pending == part else { invalid("partStarted(\(part))") }
        started.append(part)
        if let stop {
            return beginStop(stop.exit, failure: stop.failure, now: now)
        }
        switch part {
        case .store:
            state = .starting(.pool, stop: nil)
            return [.log(.info("starting", ["part": "pool"])), .startPool]
        case .pool:
            state = .starting(.intake, stop: nil)
            return [.log(.info("starting", ["part": "intake"])), .startIntake]
        case .intake:
            state = .running
            return [.log(.info("running"))] + checkDone(now: now)
        }
    }

    /// `part` could not start: stop what started, in reverse, and exit with the part's code (5 for the
    /// store, else 2), unless a failure requested meanwhile already chose one.
    public mutating func partFailed(_ part: Part, reason: String, now: Instant) -> [Action] {
        guard case .starting(let pending, let stop) = state, pending == part else { invalid("partFailed(\(part))") }
        if part == .store { storeBroken = true }
        let exit = stop.map { $0.failure ? $0.exit : part.startFailureExit } ?? part.startFailureExit
        return [.log(.error("cannot start; stopping what started", ["part": "\(part)", "error": reason]))]
            + beginStop(exit, failure: true, now: now)
    }

    /// The input ended (`error == nil`) or could not be read. A read error stops the daemon with exit 1 once
    /// nothing is outstanding, whether or not `--exit-when-done` was given: no more messages can come.
    /// May arrive before `partStarted(.intake)` (an empty input read at once); it then counts once the
    /// intake reports.
    public mutating func inputEnded(error: String?, now: Instant) -> [Action] {
        switch state {
        case .running, .stopping, .closing, .stopped, .starting(.intake, _): break
        case .idle, .starting: invalid("inputEnded")
        }
        guard !inputEnded else { return [] }
        inputEnded = true
        inputError = error
        var actions: [Action] = [error.map { .log(.error("cannot read the input; no more messages will be taken", ["error": $0])) }
            ?? .log(.info("input ended", ["outstanding": "\(outstanding)"]))]
        if case .running = state { actions += checkDone(now: now) }
        return actions
    }

    /// SIGTERM or SIGINT: a graceful stop (exit 0, or 1 after an input read error). A second signal while
    /// stopping ends the grace at once (what is not final is kept or abandoned as at the grace's end); while
    /// closing it changes nothing, since that is already bounded.
    public mutating func signal(_ signal: Signal, now: Instant) -> [Action] {
        let log = Action.log(.info("signal received; stopping", ["signal": "\(signal)"]))
        switch state {
        case .idle:
            state = .stopped(.done)
            return [log, .exit(.done)]
        case .starting(let part, let stop):
            state = .starting(part, stop: stop ?? PendingStop(exit: gracefulExit, failure: false))
            return [log]
        case .running:
            return [log] + beginStop(gracefulExit, failure: false, now: now)
        case .stopping(_, let exit):
            return [.log(.info("second signal; ending the shutdown grace now", ["signal": "\(signal)"]))]
                + endGrace(exit, now: now)
        case .closing, .stopped:
            return [log]
        }
    }

    /// The dispatcher's counts changed: `outstanding` stored messages are not final, `inFlight` of them are
    /// on the wire. Ends a grace once nothing is left to wait for; with `--exit-when-done`, stops once done.
    public mutating func outstandingChanged(_ outstanding: Int, inFlight: Int, now: Instant) -> [Action] {
        precondition(outstanding >= 0 && inFlight >= 0 && inFlight <= outstanding,
                     "outstandingChanged(\(outstanding), inFlight: \(inFlight)) in state \(state)")
        self.outstanding = outstanding
        self.inFlight = inFlight
        switch state {
        case .running: return checkDone(now: now)
        case .stopping(_, let exit): return graceIsDone ? enterClosing(exit, timeout: configuration.closeTimeout, now: now) : []
        case .idle, .starting, .closing, .stopped: return []
        }
    }

    /// A connection failed authentication (a configuration error): stop at once, exit 3.
    public mutating func authenticationFailed(reason: String, now: Instant) -> [Action] {
        fail(.authenticationFailed, [.log(.error("authentication failed; stopping: check sender_id and the server key", ["error": reason]))], now: now)
    }

    /// The events outlet failed: nothing more can be handed over (so nothing more is ACKed); stop at once, exit 4.
    public mutating func outletFailed(reason: String, now: Instant) -> [Action] {
        fail(.outletFailed, [.log(.error("cannot write events; stopping without ACKing what was not handed over", ["error": reason]))], now: now)
    }

    /// The store failed and cannot keep what it has: stop at once without flushing it, exit 5.
    public mutating func storeFatal(reason: String, now: Instant) -> [Action] {
        storeBroken = true
        return fail(.storeFailed, [.log(.error("the store failed; stopping", ["error": reason]))], now: now)
    }

    /// Every stream is closed (after `closeStreams`): flush and close the store, exit.
    public mutating func connectionsClosed(now: Instant) -> [Action] {
        guard case .closing(_, let exit) = state else { return [] }  // the pool may be empty between reconnects
        return finish(exit)
    }

    /// The timer asked for by `scheduleTimer` fired (or a stale one did: deadlines are checked against `now`).
    public mutating func timerFired(now: Instant) -> [Action] {
        switch state {
        case .stopping(let graceDeadline, let exit) where now >= graceDeadline:
            return endGrace(exit, now: now)
        case .closing(let deadline, let exit) where now >= deadline:
            return [.log(.warning("streams did not close in time; aborting them")), .abortStreams] + finish(exit)
        default:
            return []
        }
    }

    // MARK: Transitions

    /// The exit code of a graceful stop: 0, or 1 when the input could not be read.
    private var gracefulExit: ExitCode { inputError == nil ? .done : .inputFailed }

    /// Whether a graceful stop has nothing left to wait for: nothing on the wire (durable store: the rest
    /// is kept), or nothing outstanding at all (memory store: the rest would be lost).
    private var graceIsDone: Bool {
        configuration.durability == .durable ? inFlight == 0 : outstanding == 0
    }

    /// `--exit-when-done` (or an input read error) and the input ended and nothing is outstanding.
    private mutating func checkDone(now: Instant) -> [Action] {
        guard inputEnded, outstanding == 0, configuration.exitWhenDone || inputError != nil else { return [] }
        return [.log(.info("all messages final; stopping"))] + beginStop(gracefulExit, failure: false, now: now)
    }

    /// The first failure decides: it replaces a 0 (or 1) of a graceful stop, never another failure.
    private func exitAfterFailure(_ failure: ExitCode, current: ExitCode?) -> ExitCode {
        switch current {
        case nil, .done?, .inputFailed?: failure
        case let current?: current
        }
    }

    private mutating func fail(_ code: ExitCode, _ log: [Action], now: Instant) -> [Action] {
        switch state {
        case .idle:
            invalid("failure \(code)")
        case .starting(let part, let stop):
            let exit = stop.map { $0.failure ? $0.exit : code } ?? code
            state = .starting(part, stop: PendingStop(exit: exit, failure: true))
            return log
        case .running:
            return log + beginStop(code, failure: true, now: now)
        case .stopping(_, let exit):
            return log + enterClosing(exitAfterFailure(code, current: exit), timeout: configuration.failureCloseTimeout, now: now)
        case .closing(let deadline, let exit):
            state = .closing(deadline: deadline, exit: exitAfterFailure(code, current: exit))
            return log
        case .stopped:
            return []
        }
    }

    /// Stops what started, in reverse: intake first, then (after the grace, for a graceful stop) the pool,
    /// then the store.
    private mutating func beginStop(_ exit: ExitCode, failure: Bool, now: Instant) -> [Action] {
        var actions: [Action] = []
        if started.contains(.intake) { actions.append(.closeIntake) }
        guard !failure, started.contains(.pool) else {
            return actions + enterClosing(exit, timeout: configuration.failureCloseTimeout, now: now)
        }
        if graceIsDone {
            return actions + enterClosing(exit, timeout: configuration.closeTimeout, now: now)
        }
        let deadline = now + configuration.shutdownGrace
        state = .stopping(graceDeadline: deadline, exit: exit)
        return actions + [
            .log(.info("stopping: finishing messages in flight", [
                "outstanding": "\(outstanding)", "in_flight": "\(inFlight)",
                "grace_seconds": Self.seconds(configuration.shutdownGrace)])),
            .scheduleTimer(at: deadline),
        ]
    }

    /// The grace is over (or cut short): keep or abandon what is not final, then close.
    private mutating func endGrace(_ exit: ExitCode, now: Instant) -> [Action] {
        var actions: [Action] = []
        if outstanding > 0 {
            switch configuration.durability {
            case .durable:
                actions.append(.log(.warning("shutdown grace over; messages not final stay in the store and are resent after a restart",
                                             ["outstanding": "\(outstanding)", "in_flight": "\(inFlight)"])))
            case .memory:
                actions += [.log(.error("shutdown grace over; messages not final end as SHUTDOWN", ["outstanding": "\(outstanding)"])),
                            .abandonOutstanding]
            }
        }
        return actions + enterClosing(exit, timeout: configuration.closeTimeout, now: now)
    }

    private mutating func enterClosing(_ exit: ExitCode, timeout: Duration, now: Instant) -> [Action] {
        guard started.contains(.pool) else { return finish(exit) }
        let deadline = now + timeout
        state = .closing(deadline: deadline, exit: exit)
        return [.closeStreams, .scheduleTimer(at: deadline)]
    }

    private mutating func finish(_ exit: ExitCode) -> [Action] {
        var actions: [Action] = []
        if started.contains(.store) {
            if !storeBroken { actions.append(.flushStore) }
            actions.append(.closeStore)
        }
        state = .stopped(exit)
        return actions + [.log(.info("stopped", ["exit_code": "\(exit)"])), .exit(exit)]
    }

    /// `duration` in seconds for a log line ("10", "0.5").
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)" : "\(Double(seconds) + Double(attoseconds) / 1e18)"
    }

    private func invalid(_ event: String) -> Never {
        preconditionFailure("DaemonLifecycle: \(event) is impossible in state \(state) (started: \(started))")
    }
}

/// A log line the lifecycle asks for: a fixed message with structured metadata.
public struct LifecycleLog: Sendable, Equatable {
    public var level: Logger.Level
    public var message: String
    public var metadata: [String: String]

    public init(level: Logger.Level, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    static func info(_ message: String, _ metadata: [String: String] = [:]) -> LifecycleLog { .init(level: .info, message: message, metadata: metadata) }
    static func warning(_ message: String, _ metadata: [String: String] = [:]) -> LifecycleLog { .init(level: .warning, message: message, metadata: metadata) }
    static func error(_ message: String, _ metadata: [String: String] = [:]) -> LifecycleLog { .init(level: .error, message: message, metadata: metadata) }
}

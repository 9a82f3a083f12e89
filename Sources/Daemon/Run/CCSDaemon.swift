import CCS
import Dispatch
import FoundationEssentials
import Glibc
import Store
import TLS
import XMLStream
import XMPP

/// The running daemon: a thin driver on one loop. `DaemonLifecycle` decides when the parts start and stop
/// and the exit code; the pure `Dispatcher` decides what to send; the `StoreWriter` commits what the
/// dispatcher asks to persist or record (group commit, off the loop); the driver carries actions between
/// them and the seams (`XMPPConnectionFactory`, `EventSink`, `LoopScheduler`).
///
/// The two-phase order (issue 8, docs/durable-core.md): a message is reported `accepted` only once its insert
/// committed; every event is journaled first, and once its commit returns the driver writes the journaled
/// lines (with `seq` and `time`) to the events sink and flushes, and only then tells the dispatcher
/// (`persisted`, `recorded(through:)`), which releases the upstream/receipt ACKs and final messages. So an
/// upstream ACK never precedes its commit and its line in the events file (ccs-protocol.md §3).
///
/// Confined to the loop; other threads reach it through `execute`.
public final class CCSDaemon: XMPPConnectionDelegate, @unchecked Sendable {
    // @unchecked Sendable: every stored property is touched only on the loop.
    // Internal (not private) where the extensions in CCSDaemon+*.swift need them.
    //
    // The state touched on every message is `@exclusivity(unchecked)`: a runtime exclusivity check costs
    // about 77 instructions per access (`swift_beginAccess`), and the loop made about 14 per message. No
    // two accesses can overlap: one thread; the dispatcher and the lifecycle are pure (their mutating
    // calls never call back into the daemon); every other access reads or writes a value and ends before
    // any call out (a connection, the writer, the outlet, a closure), and the seams report back on a later
    // turn (`XMPPConnectionDelegate`, `StoreWriter`).
    /// The running configuration (`reload(_:)` replaces it).
    @exclusivity(unchecked) public internal(set) var configuration: Configuration {
        didSet { maxQueuedBytes = configuration.effectiveMaxQueuedBytes }
    }
    /// `configuration.effectiveMaxQueuedBytes`, kept as the configuration changes: the intake byte bound is
    /// checked after every batch and every progress, and reading the computed property on the stored
    /// configuration copied the whole struct (its strings retained and released), about 300 instructions
    /// a message.
    @exclusivity(unchecked) private(set) var maxQueuedBytes: Int
    let scheduler: any LoopScheduler
    private let post: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let connectionFactory: any XMPPConnectionFactory
    let store: any MessageStore
    @exclusivity(unchecked) var writer: StoreWriter!
    @exclusivity(unchecked) var dispatcher: Dispatcher
    @exclusivity(unchecked) var lifecycle: DaemonLifecycle
    @exclusivity(unchecked) var connections: [Int: any XMPPConnection] = [:] {
        didSet { lastSendTarget = nil }  // any change: the next send looks its connection up again
    }
    /// The connection the last send went to (`sendTarget(_:)`): sends come in runs on one connection, and
    /// this saves a lookup by id per message. Cleared by every change of `connections`.
    @exclusivity(unchecked) private var lastSendTarget: (id: Int, connection: any XMPPConnection)?
    /// Connections whose reading is paused because they are owed `max_pending_upstream` ACKs (CCSDaemon+Backpressure).
    @exclusivity(unchecked) var readingPaused: Set<Int> = []
    let outlet: any EventSink
    let logger: Logger
    let wallClock: @Sendable () -> Int64
    /// The dispatcher's clock: seconds since `origin`.
    private let origin: ContinuousClock.Instant
    @exclusivity(unchecked) private var wakeTimer: (any ScheduledWork)?
    @exclusivity(unchecked) private var wakeAt: Double?
    private var lifecycleTimer: (any ScheduledWork)?
    private var onExit: (@Sendable (Int32) -> Void)?
    @exclusivity(unchecked) private var intakeResume: (() -> Void)?
    /// The intake read-ahead bound by bytes, `max_queued_bytes` (Intake/IntakeByteBound.swift).
    @exclusivity(unchecked) var intakeBytes = IntakeByteBound()
    private var intakeStarter: (() -> Void)?
    private var loadedStore: StoreSnapshot?
    /// The store is closing (`closeStore`); the exit waits for it.
    private var storeClosing = false
    private var storeClosed = false
    private var pendingExit: DaemonLifecycle.ExitCode?
    @exclusivity(unchecked) private var reportedCounts: (outstanding: Int, inFlight: Int) = (-1, -1)
    /// The buffer `journalText` builds each event's text in.
    @exclusivity(unchecked) private var eventText: [UInt8] = []
    @exclusivity(unchecked) private var outletBroken = false
    /// The writer reported the store unavailable (or failed inserts) and not yet available again.
    @exclusivity(unchecked) var storeDown = false
    /// Records already logged when they were made (invalid intake lines, logged without their value).
    @exclusivity(unchecked) var loggedRecords: Set<UInt64> = []
    /// The HTTP API's submissions waiting for their commits, and the journal's last seq (CCSDaemon+API.swift).
    let api = DaemonAPIState()
    /// Unreadable CCS messages (nothing to ACK them by): each logged once, redeliveries counted.
    var unreadable = UnreadableMessageLog()
    /// Called on the loop with the last `seq` of every commit that journaled events (wakes the webhook outlet).
    var journalObservers: [(Int64) -> Void] = []
    /// The consumers' cursors and the `max_event_backlog` gate (CCSDaemon+EventBacklog.swift).
    let eventBacklogState = EventBacklogState()

    /// - Parameters:
    ///   - store: opened by the caller; loaded and used from here on (closed at the end of the run).
    ///   - scheduler: the loop's time and deferred work.
    ///   - post: runs work on the loop from any thread (the writer's results, intake, signals).
    ///   - connections: makes the XMPP connections.
    ///   - writerConfiguration: the group commit's bounds and retry backoff.
    ///   - wallClock: milliseconds since 1970 (accept times, journal times).
    ///   - onExit: called once, on the loop, with the process exit code.
    public init(configuration: Configuration, store: any MessageStore, outlet: any EventSink, logger: Logger,
                scheduler: any LoopScheduler, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                connections: any XMPPConnectionFactory, exitWhenDone: Bool,
                writerConfiguration: StoreWriter.Configuration = StoreWriter.Configuration(),
                wallClock: @escaping @Sendable () -> Int64 = StoreWriter.wallClockMillis,
                onExit: @escaping @Sendable (Int32) -> Void) {
        self.configuration = configuration
        self.maxQueuedBytes = configuration.effectiveMaxQueuedBytes
        self.store = store
        self.outlet = outlet
        self.logger = logger
        logger.addSecrets(configuration.credentials)
        self.scheduler = scheduler
        self.post = post
        self.connectionFactory = connections
        self.wallClock = wallClock
        self.onExit = onExit
        self.origin = scheduler.now
        var dispatcherConfiguration = configuration.dispatcherConfiguration
        // A durable store keeps what is not final when authentication fails (see docs/decisions.md).
        dispatcherConfiguration.keepsMessagesOnStop = configuration.store == .sqlite
        self.dispatcher = Dispatcher(configuration: dispatcherConfiguration)
        self.lifecycle = DaemonLifecycle(configuration: configuration.lifecycleConfiguration(exitWhenDone: exitWhenDone))
        self.writer = StoreWriter(store: store, configuration: writerConfiguration, now: wallClock, execute: post) { [weak self] report in
            self?.handle(report)  // a late report after the daemon is gone (tests drop it after exit) is moot
        }
    }

    /// The daemon on a real `EventLoop`, with `XMPPClient` connections over TLS.
    public convenience init(configuration: Configuration, store: any MessageStore, outlet: any EventSink, logger: Logger,
                            loop: EventLoop, exitWhenDone: Bool, onExit: @escaping @Sendable (Int32) -> Void) {
        // Each connection is made with the configuration current then: a reload's key and CA file apply to
        // the connections opened after it.
        let reference = DaemonReference()
        let factory = XMPPClientFactory(loop: loop) { endpoint in
            CCSDaemon.clientConfiguration(for: endpoint, reference.daemon?.configuration ?? configuration)
        }
        self.init(configuration: configuration, store: store, outlet: outlet, logger: logger, scheduler: loop,
                  post: { loop.execute($0) }, connections: factory, exitWhenDone: exitWhenDone, onExit: onExit)
        reference.daemon = self
    }

    /// Runs `work` on the daemon's loop (from any thread).
    public func execute(_ work: @escaping @Sendable () -> Void) { post(work) }

    /// Seconds since the daemon was made, monotonic (the dispatcher's clock).
    public func now() -> Double {
        Self.seconds(scheduler.now - origin)
    }

    /// `duration` in seconds, `Double(seconds) + Double(attoseconds) / 1e18` of its `components`. Taken once per
    /// ack: `components` divides 128 bits by 10^18 (about 190 instructions), so a duration that is not negative
    /// is split by an estimate in `Double` corrected to the exact quotient (the same two parts, so the same
    /// result); a negative one takes `components` (`CCSDaemonClockTests` checks both).
    static func seconds(_ duration: Duration) -> Double {
        let total = duration.attoseconds
        guard total >= 0, total < Int128(1) << 100 else {  // up to about 40,000 years
            let (seconds, attoseconds) = duration.components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
        let perSecond: Int128 = 1_000_000_000_000_000_000
        // The estimate from the two 64-bit halves: `Double(Int128)` is a generic conversion of thousands of
        // instructions.
        let estimate = Double(Int64(truncatingIfNeeded: total >> 64)) * 0x1p64 + Double(UInt64(truncatingIfNeeded: total))
        var seconds = Int128(Int64((estimate / 1e18).rounded(.down)))
        var rest = total - seconds * perSecond
        while rest < 0 { seconds -= 1; rest += perSecond }
        while rest >= perSecond { seconds += 1; rest -= perSecond }
        return Double(Int64(seconds)) + Double(Int64(rest)) / 1e18
    }

    /// Where `seconds` of the dispatcher's clock fall on the loop's clock.
    private func instant(_ seconds: Double) -> ContinuousClock.Instant {
        origin + .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// The lifecycle's state (tests, diagnostics).
    public var lifecycleState: DaemonLifecycle.State { lifecycle.state }
    /// Stored messages not final (tests, diagnostics).
    public var outstanding: Int { dispatcher.outstanding }

    /// How the intake starts once the pool runs (the reader thread); without one, `submit` is called directly.
    public func attachIntake(_ start: @escaping () -> Void) { intakeStarter = start }

    /// Starts the parts in order: store (load), pool (restore, connections), intake. Call on the loop.
    public func start() {
        logger.info("starting", ["sender_id": configuration.senderID, "connections": "\(configuration.connections)",
                                 "endpoints": configuration.endpoints.map(\.description).joined(separator: ","),
                                 "store": configuration.store.rawValue])
        perform(lifecycle.start(now: scheduler.now))
    }

    /// SIGTERM or SIGINT: a graceful stop. Call on the loop.
    public func signal(_ signal: DaemonLifecycle.Signal) {
        perform(lifecycle.signal(signal, now: scheduler.now))
    }

    // MARK: Intake

    /// One intake result from the reader thread: a valid message, or why line `line` was refused.
    public enum IntakeItem: Sendable {
        case message(DownstreamMessage, line: Int)
        case invalid(line: Int, messageID: String?, error: ValidationError)
    }

    /// Takes a batch of intake items (in input order). `resume` is called once intake may send more.
    /// Once the daemon is stopping, the dispatcher refuses them (retryable); once it has stopped, they are
    /// dropped unanswered (the process is exiting; nothing was accepted) and the reader is left waiting.
    public func submit(_ items: [IntakeItem], resume: @escaping () -> Void) {
        if case .stopped = lifecycle.state { return }
        submitNow(items, resume: resume)
    }

    private func submitNow(_ items: [IntakeItem], resume: @escaping () -> Void) {
        let now = now()
        let unixMillis = wallClock()
        // Runs of valid messages go to the dispatcher as one batch; events keep the input order.
        var batch: [(record: MessageRecord, line: Int?)] = []
        var actions: [DispatcherAction] = []
        for item in items {
            switch item {
            case .message(let message, let line):
                let key = message.targetKey
                let json = message.jsonUTF8()
                intakeBytes.submitted(jsonBytes: json.count)
                batch.append((MessageRecord(
                    messageID: message.messageID!, jsonUTF8: json, to: key, rateKey: key,
                    acceptedAt: now, acceptedAtUnixMillis: unixMillis, timeToLive: message.effectiveTimeToLive), line))
            case .invalid(let line, let messageID, let error):
                if !batch.isEmpty {
                    Self.append(dispatcher.submit(batch, now: now), to: &actions)
                    batch.removeAll()
                }
                // The event has the precise error (value shortened) for the app; the log line carries no value.
                logger.warning("message rejected", ["line": "\(line)", "message_id": messageID ?? "",
                                                    "field": ValidationError.logSafeField(error.field),
                                                    "error": error.logDescription, "retryable": "false"])
                for action in dispatcher.rejectInvalid(messageID: messageID, field: error.field, error: error.description, line: line) {
                    if case .record(let request) = action { loggedRecords.insert(request.id) }
                    actions.append(action)
                }
            }
        }
        if !batch.isEmpty { Self.append(dispatcher.submit(batch, now: now), to: &actions) }
        perform(consume actions)  // moved: a copy left here made the action queue copy every action
        let gauges = dispatcher.gauges()
        if gauges.isStopped
            || (gauges.outstanding < configuration.maxQueued && !eventBacklogHoldsIntake && !intakeMustPauseForBytes(gauges)) {
            resume()
        } else {
            intakeResume = resume
        }
    }

    /// Appends `more` to `actions`, taking `more` whole when `actions` is empty (the usual case: one call's
    /// actions), rather than copying each action into a new buffer.
    static func append(_ more: consuming [DispatcherAction], to actions: inout [DispatcherAction]) {
        if actions.isEmpty {
            actions = more
        } else {
            actions.append(contentsOf: more)
        }
    }

    /// The input ended (`error == nil`) or could not be read.
    public func inputFinished(error: String? = nil) {
        perform(lifecycle.inputEnded(error: error, now: scheduler.now))
    }

    // MARK: Lifecycle actions

    private func perform(_ actions: [DaemonLifecycle.Action]) {
        for action in actions {
            switch action {
            case .startStore:
                startStore()
            case .startPool:
                startPool()
            case .startIntake:
                intakeStarter?()
                intakeStarter = nil
                later { $0.partStarted(.intake, now: $1) }
            case .closeIntake:
                dispatcher.closeIntake(sendingQueued: configuration.store == .memory)
                if let resume = intakeResume {
                    intakeResume = nil
                    intakeBytes.reset()
                    resume()  // the reader carries on; what it submits is refused (retryable)
                }
            case .abandonOutstanding:
                perform(dispatcher.abandonOutstanding())
            case .closeStreams:
                perform(dispatcher.shutdown())
                if connections.isEmpty { later { $0.connectionsClosed(now: $1) } }
            case .abortStreams:
                for connection in connections.values { connection.abort() }
            case .flushStore:
                break  // `closeStore` commits what is pending before it closes
            case .closeStore:
                storeClosing = true
                writer.close { [self] in
                    storeClosed = true
                    if let code = pendingExit { exit(code) }
                }
            case .scheduleTimer(let deadline):
                lifecycleTimer?.cancel()
                lifecycleTimer = scheduler.schedule(at: deadline) { [weak self] in
                    guard let self else { return }
                    self.perform(self.lifecycle.timerFired(now: self.scheduler.now))
                }
            case .exit(let code):
                if storeClosing, !storeClosed { pendingExit = code } else { exit(code) }
            case .log(let log):
                logger.log(log.level, log.message, fields: log.metadata.sorted { $0.key < $1.key })
            }
        }
    }

    /// Answers the lifecycle on a later turn (its re-entrancy rule).
    private func later(_ event: @escaping (inout DaemonLifecycle, ContinuousClock.Instant) -> [DaemonLifecycle.Action]) {
        scheduler.enqueue { [weak self] in
            guard let self else { return }
            self.perform(event(&self.lifecycle, self.scheduler.now))
        }
    }

    private func startStore() {
        do throws(StoreError) {
            loadedStore = try store.load(nowUnixMillis: wallClock())
            api.lastJournaledSeq = loadedStore?.lastSeq ?? 0
            guard try replayUnwrittenEvents() else {
                outletBroken = true
                let reason = outlet.failure ?? "unknown"
                later { $0.outletFailed(reason: reason, now: $1) }
                return
            }
            later { $0.partStarted(.store, now: $1) }
        } catch {
            let reason = error.description
            later { $0.partFailed(.store, reason: reason, now: $1) }
        }
    }

    /// The consumer name of the events file in the journal's cursors (`MessageStore.acknowledgeEvents`).
    static let eventsFileConsumer = "events-file"

    /// Writes the journaled events the events file may not have: those after its cursor. A run killed between
    /// a commit and writing its lines (or whose events file failed) left them only in the journal; they go
    /// out first now, before anything new. At least once: lines written but not yet acknowledged when the
    /// previous run died come again, with the same `seq` (readers skip a `seq` they have seen).
    /// - Returns: false when the events file cannot take them.
    private func replayUnwrittenEvents() throws(StoreError) -> Bool {
        var after = try store.cursor(of: Self.eventsFileConsumer) ?? 0
        var replayed = 0
        while true {
            let events = try store.events(after: after, limit: 1000)
            guard let last = events.last else { break }
            for event in events { outlet.append(Self.eventLine(event)) }
            guard outlet.flush() else { return false }
            try store.acknowledgeEvents(consumer: Self.eventsFileConsumer, through: last.seq)
            replayed += events.count
            after = last.seq
        }
        if replayed > 0 {
            logger.warning("wrote events the previous run had journaled but not written (it stopped in between)",
                           ["events": "\(replayed)", "through_seq": "\(after)"])
        }
        return true
    }

    /// Restores what the store kept (accept times rebased from the wall clock onto the monotonic one), then
    /// opens the connections.
    private func startPool() {
        let now = now()
        let wallNow = wallClock()
        func rebase(_ unixMillis: Int64) -> Double { now - Double(wallNow - unixMillis) / 1000 }
        if let snapshot = loadedStore, !snapshot.live.isEmpty || !snapshot.handedOver.isEmpty {
            let live = snapshot.live.map { stored in
                var record = MessageRecord(messageID: stored.messageID, json: stored.json, to: stored.to, rateKey: stored.rateKey,
                                           acceptedAt: rebase(stored.acceptedAtUnixMillis),
                                           acceptedAtUnixMillis: stored.acceptedAtUnixMillis, timeToLive: stored.timeToLive)
                record.attempts = stored.attempts
                record.sends = stored.sends
                record.lastError = stored.lastError
                return record
            }
            logger.info("resuming stored messages", ["messages": "\(live.count)", "handed_over": "\(snapshot.handedOver.count)"])
            perform(dispatcher.restore(live, handedOver: snapshot.handedOver.map { ($0.messageID, rebase($0.atUnixMillis)) }, now: now))
        }
        loadedStore = nil
        perform(dispatcher.start(now: now))
        later { $0.partStarted(.pool, now: $1) }
    }

    private func exit(_ code: DaemonLifecycle.ExitCode) {
        guard let onExit else { return }
        self.onExit = nil
        wakeTimer?.cancel()
        lifecycleTimer?.cancel()
        for connection in connections.values { connection.abort() }
        if !outletBroken { outlet.flush() }
        logger.info("stopped", ["exit_code": "\(code)", "sent": "\(dispatcher.counters.sent)",
                                "acked": "\(dispatcher.counters.acked)", "upstream": "\(dispatcher.counters.upstream)",
                                "unreadable": "\(unreadable.total)", "outstanding": "\(dispatcher.outstanding)"])
        onExit(code.rawValue)
    }

    // MARK: Store reports

    private func handle(_ report: StoreWriter.Report) {
        switch report {
        case .committed(let result):
            // Hand over first (journaled lines out and flushed), then release what waited (§3).
            guard !outletBroken else { return }
            if !result.journaled.isEmpty { appendEventLines(result.journaled) }
            if let last = result.journaled.last {
                guard outlet.flush() else {
                    outletFailed()
                    return
                }
                // Rides on the next commit; a crash before it only means these lines are written again.
                writer.acknowledgeEvents(consumer: Self.eventsFileConsumer, through: last.seq)
                for observer in journalObservers { observer(last.seq) }
            }
            // Not `actions += …` into an empty array: that copied every action of a commit into a new buffer.
            var actions = result.persisted.isEmpty ? [] : dispatcher.persisted(result.persisted, now: now())
            if let through = result.recordedThrough { Self.append(dispatcher.recorded(through: through, now: now()), to: &actions) }
            perform(consume actions)
            apiCommitted(result)
            if !result.journaled.isEmpty { checkEventBacklog() }
        case .insertsFailed(let results):
            // The store could not take them (a failed commit, or it is unavailable): their rejections go out now.
            storeDown = true
            perform(dispatcher.persisted(results, now: now()))
        case .unavailable(let error):
            storeDown = true
            logger.error("the store cannot take writes; intake rejects messages (retryable) until it recovers; nothing accepted is dropped",
                         ["path": error.path, "error": error.description])
            dispatcher.storeUnavailable(reason: error.description)
        case .available:
            storeDown = false
            logger.info("the store takes writes again")
            dispatcher.storeAvailable()
        case .fatal(let error):
            logger.error("the store failed and cannot keep what it has", ["path": error.path, "error": error.description])
            perform(lifecycle.storeFatal(reason: error.description, now: scheduler.now))
        }
    }

    /// Hands the events of one commit to the outlet in one piece: every line built into one buffer.
    private func appendEventLines(_ journaled: [JournaledEvent]) {
        // The events of one commit share its time: render it once.
        var time: (unixMillis: Int64, text: [UInt8]) = (0, [])
        var capacity = 0
        var lineEnds: [Int] = []
        // Read in place through the buffer: a for-in, or passing `journaled[index]` on, copied every event
        // out (and destroyed the copy).
        let lines = journaled.withUnsafeBufferPointer { journaled in
            for index in journaled.indices { capacity += Self.eventLineCapacity(journaled[index]) }
            lineEnds.reserveCapacity(journaled.count)
            return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, written in
                for index in journaled.indices {
                    let eventTime = journaled[index].timeUnixMillis
                    if time.text.isEmpty || time.unixMillis != eventTime {
                        time.unixMillis = eventTime
                        time.text.removeAll(keepingCapacity: true)
                        Self.appendRFC3339(unixMillis: eventTime, to: &time.text)
                    }
                    written += time.text.withUnsafeBufferPointer { time in
                        Self.writeEventLine(journaled[index], time: time, to: buffer.baseAddress! + written)
                    }
                    lineEnds.append(written)
                }
            }
        }
        outlet.append(utf8Lines: lines, lineEnds: lineEnds)
    }

    /// An event's JSON object text (`DispatcherEvent.jsonObject()`): the two plain events as their pieces
    /// (`DispatcherEvent.plainText()`), any other built in one buffer kept for every event.
    func journalText(_ event: DispatcherEvent) -> EventText {
        if let text = event.plainText() { return text }
        eventText.removeAll(keepingCapacity: true)
        event.appendJSONObject(to: &eventText)
        return EventText(String(decoding: eventText, as: UTF8.self))
    }

    /// A journaled event as an events-file line: its object with `seq` and `time` appended, and a newline.
    static func eventLine(_ event: JournaledEvent) -> String {
        var out: [UInt8] = []
        appendEventLine(event, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `eventLine(event)` as UTF-8 to `out` (what the events file gets, with no `String` in between).
    static func appendEventLine(_ event: JournaledEvent, to out: inout [UInt8]) {
        var time: [UInt8] = []
        appendRFC3339(unixMillis: event.timeUnixMillis, to: &time)
        appendEventLine(event, time: time, to: &out)
    }

    /// `appendEventLine(_:to:)` with the event's time already rendered (`appendRFC3339`).
    static func appendEventLine(_ event: JournaledEvent, time: [UInt8], to out: inout [UInt8]) {
        let line = [UInt8](unsafeUninitializedCapacity: eventLineCapacity(event)) { buffer, written in
            written = time.withUnsafeBufferPointer { time in writeEventLine(event, time: time, to: buffer.baseAddress!) }
        }
        out.append(contentsOf: line)
    }

    /// Room enough for `writeEventLine(event, …)`: the object, `,"seq":` and 20 digits and a sign,
    /// `,"time":"` and the 24 bytes of the time, `"}` and the newline.
    static func eventLineCapacity(_ event: JournaledEvent) -> Int {
        event.text.utf8Count + 1 + 6 + 21 + 9 + 24 + 3
    }

    /// Writes the events-file line of `event` at `out` (room for `eventLineCapacity(event)` bytes, `time`
    /// at most 24 of them) and returns how many bytes it wrote: the object with trailing spaces and newlines
    /// removed, `seq` and `time` appended before its `}`, and a newline. A text that is not an object ends
    /// up on its line as it is.
    @inline(__always)
    static func writeEventLine(_ event: JournaledEvent, time: UnsafeBufferPointer<UInt8>,
                               to out: UnsafeMutablePointer<UInt8>) -> Int {
        if event.text.isPlainEvent {
            // Written from its pieces; its closing `}` is its last byte, written over.
            var cursor = ByteCursor(out + event.text.write(to: out) - 1)
            cursor.put(",")
            putSeqAndTime(event.seq, time, &cursor)
            return cursor.at - out
        }
        return event.text.withUTF8 { bytes -> Int in
            var cursor = ByteCursor(out)
            // Trailing newlines and spaces go (not the LF of a CR LF, which is one character).
            var end = bytes.count
            while end > 0, bytes[end - 1] == 0x20 || (bytes[end - 1] == 0x0A && !(end > 1 && bytes[end - 2] == 0x0D)) { end -= 1 }
            guard end > 0, bytes[end - 1] == UInt8(ascii: "}") else {
                cursor.put(UnsafeBufferPointer(rebasing: bytes[..<end]))
                cursor.put(0x0A)
                return cursor.at - out
            }
            cursor.put(UnsafeBufferPointer(rebasing: bytes[..<(end - 1)]))
            if !(end > 1 && bytes[end - 2] == UInt8(ascii: "{")) { cursor.put(UInt8(ascii: ",")) }
            putSeqAndTime(event.seq, time, &cursor)
            return cursor.at - out
        }
    }

    /// The end of an events-file line: `"seq":SEQ,"time":"TIME"}` and a newline.
    @inline(__always)
    private static func putSeqAndTime(_ seq: Int64, _ time: UnsafeBufferPointer<UInt8>, _ cursor: inout ByteCursor) {
        cursor.put("\"seq\":")
        cursor.put(decimal: seq)
        cursor.put(",\"time\":\"")
        cursor.put(time)
        cursor.put("\"}\n")
    }

    /// An event not journaled (a rejection while the store is down): its object with `time` only.
    static func unjournaledLine(_ event: DispatcherEvent, timeUnixMillis: Int64) -> String {
        var line = event.jsonObject()
        line.removeLast()
        return line + ",\"time\":\"\(rfc3339(unixMillis: timeUnixMillis))\"}\n"
    }

    /// `2026-11-30T12:00:00.123Z` (RFC 3339, UTC, milliseconds).
    static func rfc3339(unixMillis: Int64) -> String {
        var out: [UInt8] = []
        appendRFC3339(unixMillis: unixMillis, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `rfc3339(unixMillis:)` as 24 ASCII bytes.
    static func appendRFC3339(unixMillis: Int64, to out: inout [UInt8]) {
        var seconds = time_t(unixMillis.quotientAndRemainder(dividingBy: 1000).quotient)
        var millis = Int(unixMillis % 1000)
        if millis < 0 {
            millis += 1000
            seconds -= 1
        }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Digits by hand: `String(format:)` goes through CoreFoundation and was a visible part of the
        // per-message cost (two events per message).
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: 24))
        func put(_ value: Int, at offset: Int, digits: Int) {
            var value = value
            for index in stride(from: start + offset + digits - 1, through: start + offset, by: -1) {
                out[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, at: 0, digits: 4)
        put(Int(parts.tm_mon) + 1, at: 5, digits: 2)
        put(Int(parts.tm_mday), at: 8, digits: 2)
        put(Int(parts.tm_hour), at: 11, digits: 2)
        put(Int(parts.tm_min), at: 14, digits: 2)
        put(Int(parts.tm_sec), at: 17, digits: 2)
        put(millis, at: 20, digits: 3)
        out[start + 4] = UInt8(ascii: "-")
        out[start + 7] = UInt8(ascii: "-")
        out[start + 10] = UInt8(ascii: "T")
        out[start + 13] = UInt8(ascii: ":")
        out[start + 16] = UInt8(ascii: ":")
        out[start + 19] = UInt8(ascii: ".")
        out[start + 23] = UInt8(ascii: "Z")
    }

    /// The events sink failed: nothing more can be handed over, so nothing more is ACKed (exit 4).
    private func outletFailed() {
        guard !outletBroken else { return }
        outletBroken = true
        perform(lifecycle.outletFailed(reason: outlet.failure ?? "unknown", now: scheduler.now))
    }

    // MARK: Dispatcher actions

    /// Carries out the dispatcher's actions in order, then the once-per-call follow-ups (paused readers,
    /// intake room, the wake timer, the lifecycle's counts).
    ///
    /// Takes the array owned and moves each action out of it (`DispatcherActionQueue`): iterating a borrowed
    /// array copies every action (the record inside retained and released again), measured at about 450
    /// instructions per action, five actions per message.
    func perform(_ actions: consuming [DispatcherAction]) {
        var queue = DispatcherActionQueue(actions)
        while let action = queue.next() {
            perform(action)
        }
        if !readingPaused.isEmpty { resumeReadingWhenPaid() }
        // The dispatcher's figures read once for the three follow-ups (`Dispatcher.gauges()`), and again only
        // when a resumed intake may have submitted meanwhile.
        var gauges = dispatcher.gauges()
        if resumeIntakeIfRoom(gauges) { gauges = dispatcher.gauges() }
        scheduleWake(gauges.nextWakeup)
        reportCounts(gauges)
    }

    private func perform(_ action: consuming DispatcherAction) {
        switch consume action {
        case .open(let id, let endpoint):
            let connection = connectionFactory.makeConnection(id: id, endpoint: endpoint, delegate: self)
            connections[id] = connection
            connection.start()
        case .send(let id, let record):
            if let connection = sendTarget(id) { _ = record.withStanza { connection.send(utf8Bytes: $0) } }
        case .ack(let id, let to, let messageID):
            // Released by `recorded(through:)`: its event is committed and written to the events sink.
            connections[id]?.send(raw: CCSStanza.ack(to: to, messageID: messageID))
        case .persist(let record, let line):
            writer.enqueue(StoreBatch.Insert(record: record, line: line,
                                             acceptedText: journalText(.accepted(messageID: record.messageID))))
        case .record(let request) where storeDown && request.finalMessageID == nil && request.handedOverMessageID == nil:
            // A rejection while the store cannot take writes: the submitter must learn it now (retryable),
            // not once the disk has room again. It is written at once, not journaled (no `seq`); it
            // releases nothing, so nothing else is handed over early.
            outlet.append(Self.unjournaledLine(request.event, timeUnixMillis: wallClock()))
            if !outlet.flush() { outletFailed() }
            apiRecord(request, writtenNow: true)
            if loggedRecords.isEmpty || loggedRecords.remove(request.id) == nil { log(request.event) }
        case .record(let request):
            // Taken apart, not copied: its message_ids move into the store's record.
            let hash = request.finalMessageIDHash
            // `consume`: calling the consuming `parts()` on the bound value copied the whole request first.
            let (id, event, finalMessageID, handedOverMessageID) = (consume request).parts()
            writer.enqueue(StoreBatch.Record(id: id, text: journalText(event), finalMessageID: finalMessageID,
                                             finalMessageIDHash: hash, handedOverMessageID: handedOverMessageID))
            // `apiRecord(_:writtenNow: false)` has work only for a rejection.
            if case .rejected = event { apiRecord(RecordRequest(id: id, event: event), writtenNow: false) }
            if loggedRecords.isEmpty || loggedRecords.remove(id) == nil { log(event) }
        case .saveProgress(let record):
            writer.enqueueProgress(record)
        case .log(let log):
            logger.log(Self.level(log.level), log.message, fields: log.metadata)
        case .abort(let id, let reason):
            logger.warning("connection unresponsive; dropping it and resending its messages", ["connection": "\(id)", "reason": reason])
            connections[id]?.abort()
        case .close(let id):
            connections[id]?.close()
        case .stop(let reason):
            logger.error("authentication failed: check sender_id and the server key",
                         ["sender_id": configuration.senderID, "jid": "\(configuration.senderID)@\(configuration.jidDomain)",
                          "messages_kept": configuration.store == .sqlite ? "\(dispatcher.outstanding)" : "0"])
            perform(lifecycle.authenticationFailed(reason: reason, now: scheduler.now))
        }
    }

    /// `connections[id]`, through the one-entry cache of the last send's connection.
    @inline(__always)
    private func sendTarget(_ id: Int) -> (any XMPPConnection)? {
        if let last = lastSendTarget, last.id == id { return last.connection }
        guard let connection = connections[id] else { return nil }
        lastSendTarget = (id, connection)
        return connection
    }

    /// Lets a waiting intake read on once the outstanding messages fell below half of `max_queued` (and their
    /// bytes below half of `max_queued_bytes`) and the event backlog does not hold it (`max_event_backlog`).
    func resumeIntakeIfRoom() {
        resumeIntakeIfRoom(dispatcher.gauges())
    }

    /// `resumeIntakeIfRoom()` on figures just read; returns true when it resumed the intake.
    @discardableResult
    func resumeIntakeIfRoom(_ gauges: Dispatcher.Gauges) -> Bool {
        if let resume = intakeResume, gauges.outstanding < max(configuration.maxQueued / 2, 1),
           !eventBacklogHoldsIntake, intakeMayResumeForBytes(gauges) {
            intakeResume = nil
            resume()
            return true
        }
        return false
    }

    /// Reads the dispatcher where it is stored. Reading a computed property of the stored struct directly
    /// copies the whole `Dispatcher` first (every table retained, then released): measured at about 1,000
    /// instructions per read, several reads per message. Pass a closure (`{ $0.outstanding }`), not a key
    /// path: a key path applied to it copies the dispatcher all the same. Even so, a non-mutating member
    /// called on it copies its bytes (about 800, without retains) to pass them: the per-message follow-ups
    /// read `Dispatcher.gauges()` instead, a mutating call, which gets the dispatcher by address.
    @inline(__always)
    func inPlace<T>(_ read: (inout Dispatcher) -> T) -> T { read(&dispatcher) }

    /// Tells the lifecycle what is outstanding. For a durable store's grace, "in flight" also counts what is
    /// not quiescent (inserts and records not yet committed): the stop waits for those too.
    private func reportCounts(_ gauges: Dispatcher.Gauges) {
        let outstanding = gauges.outstanding
        let busy = gauges.isQuiescent ? 0 : max(gauges.inFlight, 1)
        let inFlight = min(busy, outstanding)
        guard reportedCounts != (outstanding, inFlight) else { return }
        reportedCounts = (outstanding, inFlight)
        switch lifecycle.state {
        case .running, .stopping: perform(lifecycle.outstandingChanged(outstanding, inFlight: inFlight, now: scheduler.now))
        default: _ = lifecycle.outstandingChanged(outstanding, inFlight: inFlight, now: scheduler.now)
        }
    }


    /// Logs an event as it is journaled. Log lines never carry message content or a full token.
    private func log(_ event: DispatcherEvent) {
        switch event {
        case .connection(let id, let endpoint, let state, let reason):
            let closing: Bool = if case .closing = lifecycle.state { true } else { false }
            let level: Logger.Level = state == .closed && reason != nil && !closing ? .warning : .info
            logger.log(level, "connection \(state.rawValue)", ["connection": "\(id)", "endpoint": endpoint.description, "reason": reason ?? ""])
        case .rejected(let messageID, let field, let error, let line, let retryable, _):
            logger.warning("message rejected", ["line": line.map { "\($0)" } ?? "", "message_id": messageID ?? "",
                                                "field": ValidationError.logSafeField(field), "error": error,
                                                "retryable": retryable ? "true" : "false"])
        case .nacked(let messageID, let error, _, true, _, _):
            logger.info("message failed", ["message_id": messageID, "error": error])
        case .expired(let messageID):
            logger.info("message expired", ["message_id": messageID])
        case .nacked(let messageID, let error, _, false, _, _):
            logger.debug("message will be retried", ["message_id": messageID, "error": error])
        case .accepted(let messageID):
            logger.debug("message accepted", ["message_id": messageID])
        case .acked(let messageID, let to, _, _):
            if logger.isEnabled(.debug) { logger.debug("message acked", ["message_id": messageID, "to": shortenedToken(to)]) }
        case .upstream(let upstream) where upstream.decodeError != nil:
            logger.warning("upstream message not fully decoded; handed over with decode_error and ACKed",
                           ["message_id": upstream.messageID, "from": shortenedToken(upstream.from)])
        case .receipt(let receipt) where receipt.decodeError != nil:
            logger.warning("receipt not fully decoded; handed over with decode_error and ACKed", ["message_id": receipt.messageID])
        case .upstream(let upstream):
            if logger.isEnabled(.debug) { logger.debug("upstream", ["message_id": upstream.messageID, "from": shortenedToken(upstream.from)]) }
        case .receipt(let receipt):
            logger.debug("receipt", ["message_id": receipt.messageID])
        }
    }

    private static func level(_ level: DispatcherLog.Level) -> Logger.Level {
        switch level {
        case .debug: .debug
        case .info: .info
        case .warning: .warning
        case .error: .error
        }
    }

    private func scheduleWake(_ nextWakeup: Double?) {
        guard let next = nextWakeup else { return }
        if let wakeAt, wakeAt <= next { return }
        wakeTimer?.cancel()
        wakeAt = next
        wakeTimer = scheduler.schedule(at: instant(next)) { [weak self] in
            guard let self else { return }
            self.wakeAt = nil
            // One more loop turn first: socket reads that queued up while the loop was busy (a slow events
            // consumer) run before timeouts are judged, so ccsd's own stall never looks like a silent server.
            self.scheduler.enqueue { [weak self] in
                guard let self else { return }
                self.perform(self.dispatcher.tick(now: self.now()))
            }
        }
    }

    // MARK: XMPPConnectionDelegate

    public func connectionDidBecomeReady(_ connection: any XMPPConnection, jid: String) {
        perform(dispatcher.connectionReady(connection.connectionID, now: now()))
    }

    public func connection(_ connection: any XMPPConnection, didReceive stanza: XMLElement) {
        received(Result { () throws(InboundParseError) in try InboundMessage.parse(stanza: stanza) }, on: connection)
    }

    /// What `connection(_:didReceive:)` and `connection(_:didReceivePayload:)` do with a parsed stanza.
    func received(_ parsed: Result<InboundMessage?, InboundParseError>, on connection: any XMPPConnection) {
        switch parsed {
        case .success(let message):
            if let message { received(message, on: connection) }
        case .failure(let error):
            receivedUnreadable(error, on: connection)
        }
    }

    /// A CCS message read from connection `connection`, for the dispatcher.
    func received(_ message: InboundMessage, on connection: any XMPPConnection) {
        perform(dispatcher.received(message, on: connection.connectionID, now: now()))
        pauseReadingIfOwed(connection)
    }

    /// A CCS message that could not be read.
    func receivedUnreadable(_ error: InboundParseError, on connection: any XMPPConnection) {
        // Nothing to ACK it by (no message_id, or an upstream without from): CCS may redeliver it, so log
        // each one once (by message_id, or by payload digest) and count the rest.
        if unreadable.record(error) {
            logger.warning("unreadable CCS message ignored; its redeliveries are counted, not logged",
                           ["connection": "\(connection.connectionID)", "message_id": error.messageID ?? "",
                            "error": error.description, "unreadable_total": "\(unreadable.total)"])
        }
    }

    public func connection(_ connection: any XMPPConnection, noticed error: XMPPError) {
        // A refused session or stanzas ignored before binding: the stream carries on (XMPPClientDelegate).
        logger.warning("server misbehaved; carrying on", ["connection": "\(connection.connectionID)", "error": error.description])
    }

    public func connection(_ connection: any XMPPConnection, didEndWith error: XMPPError) {
        // Reported on a later turn than any call of ours (the seam's re-entrancy rule).
        let id = connection.connectionID
        guard connections[id] === connection else { return }
        connections[id] = nil
        let end: ConnectionEnd
        if error.kind == .closedLocally {
            end = .closedLocally
        } else if error.isConfigurationError {
            end = .authenticationFailed(reason: error.description)
        } else if error.kind == .streamError, error.condition == "conflict" {
            end = .replaced(reason: error.description)  // another login replaced it: the slot backs off
        } else if let condition = error.unhealableCondition {
            end = .refused(condition: condition, reason: error.description)  // the dispatcher logs it
        } else {
            end = .lost(reason: error.description)
        }
        perform(dispatcher.connectionEnded(id, end, now: now()))
        if connections.isEmpty, case .closing = lifecycle.state {
            perform(lifecycle.connectionsClosed(now: scheduler.now))
        }
    }
}

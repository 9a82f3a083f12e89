import Daemon
import Testing

/// Transcripts of the service lifecycle: events in, actions out, time stepped by hand. No sockets.
@Suite struct DaemonLifecycleTests {
    typealias Action = DaemonLifecycle.Action
    let t0 = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int(seconds * 1000)) }

    /// The actions without the log lines.
    func performed(_ actions: [Action]) -> [Action] {
        actions.filter { if case .log = $0 { false } else { true } }
    }

    func logs(_ actions: [Action]) -> [LifecycleLog] {
        actions.compactMap { if case .log(let log) = $0 { log } else { nil } }
    }

    func configuration(_ durability: DaemonLifecycle.StoreDurability = .durable, exitWhenDone: Bool = false) -> DaemonLifecycle.Configuration {
        DaemonLifecycle.Configuration(shutdownGrace: .seconds(10), closeTimeout: .seconds(3), failureCloseTimeout: .seconds(1),
                                      exitWhenDone: exitWhenDone, durability: durability)
    }

    /// A lifecycle with every part started at t0.
    func running(_ configuration: DaemonLifecycle.Configuration) -> DaemonLifecycle {
        var lifecycle = DaemonLifecycle(configuration: configuration)
        _ = lifecycle.start(now: t0)
        for part in DaemonLifecycle.Part.allCases { _ = lifecycle.partStarted(part, now: t0) }
        #expect(lifecycle.state == .running)
        return lifecycle
    }

    // MARK: Start

    @Test func startsStoreThenPoolThenIntake() {
        var lifecycle = DaemonLifecycle(configuration: configuration())
        #expect(performed(lifecycle.start(now: t0)) == [.startStore])
        #expect(lifecycle.state == .starting(.store, stop: nil))
        #expect(performed(lifecycle.partStarted(.store, now: t0)) == [.startPool])
        #expect(performed(lifecycle.partStarted(.pool, now: t0)) == [.startIntake])
        #expect(performed(lifecycle.partStarted(.intake, now: t0)) == [])
        #expect(lifecycle.state == .running)
        #expect(lifecycle.started == [.store, .pool, .intake])
    }

    @Test func aPartFailingToStartStopsWhatStartedInReverse() {
        // The store cannot be opened: nothing else started; exit 5.
        var lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        let storeFailed = lifecycle.partFailed(.store, reason: "unable to open database file", now: t0)
        #expect(performed(storeFailed) == [.exit(.storeFailed)])
        #expect(logs(storeFailed).first == LifecycleLog(level: .error, message: "cannot start; stopping what started",
                                                         metadata: ["part": "store", "error": "unable to open database file"]))

        // The pool cannot start: the store closes (flushed first); exit 2.
        lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.partStarted(.store, now: t0)
        #expect(performed(lifecycle.partFailed(.pool, reason: "x", now: t0)) == [.flushStore, .closeStore, .exit(.configuration)])

        // The intake cannot start: the streams close (bounded by the failure timeout), then the store.
        lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.partStarted(.store, now: t0)
        _ = lifecycle.partStarted(.pool, now: t0)
        #expect(performed(lifecycle.partFailed(.intake, reason: "cannot open in.jsonl", now: at(0.5)))
                    == [.closeStreams, .scheduleTimer(at: at(1.5))])
        #expect(lifecycle.state == .closing(deadline: at(1.5), exit: .configuration))
        #expect(performed(lifecycle.connectionsClosed(now: at(0.6))) == [.flushStore, .closeStore, .exit(.configuration)])
        #expect(lifecycle.state == .stopped(.configuration))
    }

    @Test func aSignalDuringStartWaitsForThePartThenStopsWhatStarted() {
        var lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.partStarted(.store, now: t0)
        #expect(performed(lifecycle.signal(.terminate, now: t0)) == [])
        #expect(lifecycle.state == .starting(.pool, stop: .init(exit: .done, failure: false)))
        // The pool reports: the intake is never started; nothing in flight, so the streams close at once.
        #expect(performed(lifecycle.partStarted(.pool, now: at(1))) == [.closeStreams, .scheduleTimer(at: at(4))])
        #expect(performed(lifecycle.connectionsClosed(now: at(1.2))) == [.flushStore, .closeStore, .exit(.done)])

        // Before the store reported: only the store is closed.
        lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.signal(.interrupt, now: t0)
        #expect(performed(lifecycle.partStarted(.store, now: t0)) == [.flushStore, .closeStore, .exit(.done)])

        // A signal before start exits at once.
        lifecycle = DaemonLifecycle(configuration: configuration())
        #expect(performed(lifecycle.signal(.terminate, now: t0)) == [.exit(.done)])
    }

    @Test func aPartFailingAfterAStopWasRequestedKeepsTheFailureCode() {
        var lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(performed(lifecycle.partFailed(.store, reason: "locked", now: t0)) == [.exit(.storeFailed)])
    }

    // MARK: Graceful stop

    @Test func sigtermLetsMessagesInFlightFinishWithinTheGrace() {
        var lifecycle = running(configuration(.durable))
        _ = lifecycle.outstandingChanged(5, inFlight: 2, now: t0)
        let stop = lifecycle.signal(.terminate, now: at(1))
        #expect(performed(stop) == [.closeIntake, .scheduleTimer(at: at(11))])
        #expect(lifecycle.state == .stopping(graceDeadline: at(11), exit: .done))
        #expect(logs(stop).map(\.message) == ["signal received; stopping", "stopping: finishing messages in flight"])
        #expect(performed(lifecycle.outstandingChanged(4, inFlight: 1, now: at(2))) == [])
        // Durable store: once nothing is on the wire, the 3 queued messages stay stored; no SHUTDOWN.
        #expect(performed(lifecycle.outstandingChanged(3, inFlight: 0, now: at(3))) == [.closeStreams, .scheduleTimer(at: at(6))])
        #expect(performed(lifecycle.timerFired(now: at(5))) == [])  // early: the close deadline is at 6
        #expect(performed(lifecycle.connectionsClosed(now: at(3.5))) == [.flushStore, .closeStore, .exit(.done)])
    }

    @Test func withTheMemoryStoreSigtermWaitsForEveryOutstandingMessage() {
        var lifecycle = running(configuration(.memory))
        _ = lifecycle.outstandingChanged(5, inFlight: 2, now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(performed(lifecycle.outstandingChanged(3, inFlight: 0, now: at(1))) == [])
        #expect(performed(lifecycle.outstandingChanged(0, inFlight: 0, now: at(2))) == [.closeStreams, .scheduleTimer(at: at(5))])
        #expect(performed(lifecycle.connectionsClosed(now: at(2))) == [.flushStore, .closeStore, .exit(.done)])
    }

    @Test func whenTheGraceRunsOutADurableStoreKeepsWhatIsNotFinal() {
        var lifecycle = running(configuration(.durable))
        _ = lifecycle.outstandingChanged(7, inFlight: 3, now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(performed(lifecycle.timerFired(now: at(9.9))) == [])  // early wake-up: nothing
        let end = lifecycle.timerFired(now: at(10))
        #expect(performed(end) == [.closeStreams, .scheduleTimer(at: at(13))])
        #expect(!end.contains(.abandonOutstanding))
        #expect(logs(end).first?.message == "shutdown grace over; messages not final stay in the store and are resent after a restart")
        #expect(performed(lifecycle.connectionsClosed(now: at(10.5))) == [.flushStore, .closeStore, .exit(.done)])
    }

    @Test func whenTheGraceRunsOutTheMemoryStoreEndsTheRestAsShutdown() {
        var lifecycle = running(configuration(.memory))
        _ = lifecycle.outstandingChanged(7, inFlight: 3, now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        let end = lifecycle.timerFired(now: at(10))
        #expect(performed(end) == [.abandonOutstanding, .closeStreams, .scheduleTimer(at: at(13))])
        #expect(logs(end).first == LifecycleLog(level: .error, message: "shutdown grace over; messages not final end as SHUTDOWN",
                                                 metadata: ["outstanding": "7"]))
    }

    @Test func aSecondSignalEndsTheGraceAndAThirdChangesNothing() {
        var lifecycle = running(configuration(.memory))
        _ = lifecycle.outstandingChanged(2, inFlight: 2, now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(performed(lifecycle.signal(.terminate, now: at(1))) == [.abandonOutstanding, .closeStreams, .scheduleTimer(at: at(4))])
        #expect(performed(lifecycle.signal(.interrupt, now: at(2))) == [])
        #expect(lifecycle.state == .closing(deadline: at(4), exit: .done))
    }

    @Test func streamsThatNeverCloseAreAbortedAtTheDeadline() {
        var lifecycle = running(configuration())
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(lifecycle.state == .closing(deadline: at(3), exit: .done))
        #expect(performed(lifecycle.timerFired(now: at(2.99))) == [])
        #expect(performed(lifecycle.timerFired(now: at(3))) == [.abortStreams, .flushStore, .closeStore, .exit(.done)])
        // Late reports after the exit are ignored.
        #expect(lifecycle.connectionsClosed(now: at(3.1)) == [])
        #expect(lifecycle.timerFired(now: at(20)) == [])
        #expect(lifecycle.state == .stopped(.done))
    }

    // MARK: End of input

    @Test func exitWhenDoneWaitsForTheEndOfInputAndNothingOutstanding() {
        var lifecycle = running(configuration(exitWhenDone: true))
        _ = lifecycle.outstandingChanged(2, inFlight: 2, now: t0)
        #expect(performed(lifecycle.outstandingChanged(0, inFlight: 0, now: at(1))) == [])  // input still open
        _ = lifecycle.outstandingChanged(1, inFlight: 1, now: at(2))
        #expect(performed(lifecycle.inputEnded(error: nil, now: at(3))) == [])
        #expect(performed(lifecycle.outstandingChanged(0, inFlight: 0, now: at(4))) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(7))])
        #expect(performed(lifecycle.connectionsClosed(now: at(4))) == [.flushStore, .closeStore, .exit(.done)])
    }

    @Test func exitWhenDoneWithNothingOutstandingStopsAtTheEndOfInput() {
        var lifecycle = running(configuration(exitWhenDone: true))
        #expect(performed(lifecycle.inputEnded(error: nil, now: at(1))) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(4))])
    }

    @Test func anInputThatEndsBeforeTheIntakeReportsCountsOnceItDoes() {
        var lifecycle = DaemonLifecycle(configuration: configuration(exitWhenDone: true))
        _ = lifecycle.start(now: t0)
        _ = lifecycle.partStarted(.store, now: t0)
        _ = lifecycle.partStarted(.pool, now: t0)
        #expect(performed(lifecycle.inputEnded(error: nil, now: t0)) == [])
        #expect(performed(lifecycle.partStarted(.intake, now: t0)) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(3))])
    }

    @Test func withoutExitWhenDoneTheEndOfInputKeepsTheDaemonRunning() {
        var lifecycle = running(configuration())
        #expect(performed(lifecycle.inputEnded(error: nil, now: at(1))) == [])
        #expect(performed(lifecycle.outstandingChanged(0, inFlight: 0, now: at(2))) == [])
        #expect(lifecycle.state == .running)
    }

    @Test func anInputReadErrorFinishesWhatWasAcceptedThenExits1() {
        var lifecycle = running(configuration())
        _ = lifecycle.outstandingChanged(1, inFlight: 1, now: t0)
        let ended = lifecycle.inputEnded(error: "Input/output error", now: at(1))
        #expect(performed(ended) == [])
        #expect(logs(ended) == [LifecycleLog(level: .error, message: "cannot read the input; no more messages will be taken",
                                             metadata: ["error": "Input/output error"])])
        #expect(performed(lifecycle.outstandingChanged(0, inFlight: 0, now: at(2))) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(5))])
        #expect(performed(lifecycle.connectionsClosed(now: at(2))) == [.flushStore, .closeStore, .exit(.inputFailed)])
    }

    @Test func aSignalAfterAnInputReadErrorStillExits1() {
        var lifecycle = running(configuration())
        _ = lifecycle.outstandingChanged(3, inFlight: 0, now: t0)
        _ = lifecycle.inputEnded(error: "Input/output error", now: at(1))
        _ = lifecycle.signal(.terminate, now: at(2))
        #expect(lifecycle.state == .closing(deadline: at(5), exit: .inputFailed))
    }

    // MARK: Failures

    @Test func anOutletFailureStopsAtOnceWithExit4() {
        var lifecycle = running(configuration())
        _ = lifecycle.outstandingChanged(5, inFlight: 3, now: t0)
        let failed = lifecycle.outletFailed(reason: "No space left on device", now: at(1))
        #expect(performed(failed) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(2))])
        #expect(logs(failed).first?.metadata == ["error": "No space left on device"])
        #expect(performed(lifecycle.connectionsClosed(now: at(1.1))) == [.flushStore, .closeStore, .exit(.outletFailed)])
    }

    @Test func anAuthenticationFailureStopsAtOnceWithExit3() {
        var lifecycle = running(configuration(.memory))
        _ = lifecycle.outstandingChanged(5, inFlight: 0, now: t0)
        let failed = lifecycle.authenticationFailed(reason: "not-authorized", now: at(1))
        #expect(performed(failed) == [.closeIntake, .closeStreams, .scheduleTimer(at: at(2))])
        #expect(!failed.contains(.abandonOutstanding))  // the dispatcher already ended them AUTHENTICATION_FAILED
        #expect(performed(lifecycle.timerFired(now: at(2))) == [.abortStreams, .flushStore, .closeStore, .exit(.authenticationFailed)])
    }

    @Test func aFatalStoreErrorStopsWithoutFlushingTheStoreWithExit5() {
        var lifecycle = running(configuration())
        _ = lifecycle.outstandingChanged(5, inFlight: 3, now: t0)
        #expect(performed(lifecycle.storeFatal(reason: "database disk image is malformed", now: at(1)))
                    == [.closeIntake, .closeStreams, .scheduleTimer(at: at(2))])
        #expect(performed(lifecycle.connectionsClosed(now: at(1.5))) == [.closeStore, .exit(.storeFailed)])
    }

    @Test func aFailureDuringTheGraceEndsItAndReplacesExit0() {
        var lifecycle = running(configuration())
        _ = lifecycle.outstandingChanged(5, inFlight: 3, now: t0)
        _ = lifecycle.signal(.terminate, now: t0)
        #expect(performed(lifecycle.outletFailed(reason: "Broken pipe", now: at(2))) == [.closeStreams, .scheduleTimer(at: at(3))])
        #expect(lifecycle.state == .closing(deadline: at(3), exit: .outletFailed))
    }

    @Test func theFirstFailureDecidesTheExitCode() {
        var lifecycle = running(configuration())
        _ = lifecycle.authenticationFailed(reason: "not-authorized", now: t0)
        #expect(performed(lifecycle.outletFailed(reason: "Broken pipe", now: at(0.5))) == [])
        #expect(lifecycle.state == .closing(deadline: at(1), exit: .authenticationFailed))
        // A failure while starting waits for the part, then keeps its code.
        lifecycle = DaemonLifecycle(configuration: configuration())
        _ = lifecycle.start(now: t0)
        _ = lifecycle.partStarted(.store, now: t0)
        _ = lifecycle.storeFatal(reason: "disk I/O error", now: t0)
        #expect(performed(lifecycle.partStarted(.pool, now: at(1))) == [.closeStreams, .scheduleTimer(at: at(2))])
        #expect(performed(lifecycle.connectionsClosed(now: at(1))) == [.closeStore, .exit(.storeFailed)])
    }

    @Test func impossibleTransitionsTrap() async {
        await #expect(processExitsWith: .failure) {
            var lifecycle = DaemonLifecycle(configuration: .init())
            _ = lifecycle.partStarted(.pool, now: .now)
        }
    }
}

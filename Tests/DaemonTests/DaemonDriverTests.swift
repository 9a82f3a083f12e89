import CCS
import Daemon
import Dispatch
import Foundation
import Store
import Synchronization
import Testing
import TestSupport
import XMLStream
import XMPP

/// The real `CCSDaemon` driven without sockets: mock connections, a manual loop, an in-memory outlet, and a
/// store that the test can hold or fail. Transcripts of the two-phase order and of the lifecycle.
@Suite struct DaemonDriverTests {
    /// A store whose commits can be held (until released) or fail (retryable full disk, or fatal corruption).
    final class ControlledStore: MessageStore, @unchecked Sendable {
        enum Failure { case none, full, corrupt }
        private let inner = InMemoryMessageStore()
        private let state = Locked<(holding: Bool, failure: Failure, commits: Int)>((false, .none, 0))
        private let released = DispatchSemaphore(value: 0)

        var holding: Bool {
            get { state.withLock { $0.holding } }
            set { state.withLock { $0.holding = newValue } }
        }
        var failure: Failure {
            get { state.withLock { $0.failure } }
            set { state.withLock { $0.failure = newValue } }
        }
        var commits: Int { state.withLock { $0.commits } }
        func release() { holding = false; released.signal() }
        private let resizes = Locked<[Int]>([])
        /// The page cache sizes asked for (`setPageCache(kib:)`), in order.
        var pageCacheResizes: [Int] { resizes.withLock { $0 } }
        func setPageCache(kib: Int) throws(StoreError) { resizes.withLock { $0.append(kib) } }

        func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot { try inner.load(nowUnixMillis: nowUnixMillis) }
        func commit(_ batch: StoreBatch, nowUnixMillis: Int64) throws(StoreError) -> StoreCommitResult {
            if holding { released.wait() }
            state.withLock { $0.commits += 1 }
            switch failure {
            case .none: return try inner.commit(batch, nowUnixMillis: nowUnixMillis)
            case .full: throw StoreError(code: .full, path: "/state/ccsd.sqlite3", operation: "committing a batch",
                                         message: "database or disk is full", sqliteCode: 13)
            case .corrupt: throw StoreError(code: .corrupt, path: "/state/ccsd.sqlite3", operation: "committing a batch",
                                            message: "database disk image is malformed", sqliteCode: 11)
            }
        }
        func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] { try inner.events(after: seq, limit: limit) }
        func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) { try inner.acknowledgeEvents(consumer: consumer, through: seq) }
        func cursor(of consumer: String) throws(StoreError) -> Int64? { try inner.cursor(of: consumer) }
        func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? { try inner.storedMessage(messageID) }
        func close() {}  // kept open: the test inspects what stayed stored
    }

    /// Work posted from other threads (the store writer's queue), run on the manual loop by `settle`.
    final class Inbox: @unchecked Sendable {
        private let items = Locked<[@Sendable () -> Void]>([])
        func post(_ work: @escaping @Sendable () -> Void) { items.withLock { $0.append(work) } }
        func take() -> [@Sendable () -> Void] { items.withLock { let taken = $0; $0.removeAll(); return taken } }
    }

    final class Harness: @unchecked Sendable {
        let loop = ManualLoop()
        let inbox = Inbox()
        let outlet = MemoryOutlet()
        let store: ControlledStore
        let factory: MockConnectionFactory
        let daemon: CCSDaemon
        private final class CodeBox: Sendable { let value = Locked<Int32?>(nil) }
        private let exitCode = CodeBox()
        var exited: Int32? { exitCode.value.withLock { $0 } }

        /// - Parameter sharing: the store of an earlier run (a restart).
        init(store kind: Configuration.StoreKind = .sqlite, exitWhenDone: Bool = false, sharing: ControlledStore? = nil,
             configure: (inout Configuration) -> Void = { _ in }) {
            store = sharing ?? ControlledStore()
            let store = store
            factory = MockConnectionFactory(loop: loop)
            var configuration = Configuration()
            configuration.senderID = "123456789012"
            configuration.serverKey = Secret("test-key")
            configuration.primaryEndpoint = Endpoint(host: "ccs.test", port: 5235)
            configuration.connections = 1
            configuration.store = kind
            configuration.shutdownGraceSeconds = 2
            configure(&configuration)
            let inbox = inbox
            let box = exitCode
            // The inbox is held weakly: work the writer posts after the test's last turn would otherwise keep
            // the writer, its queue and its store alive through a cycle (writer → post → inbox → work → writer).
            daemon = CCSDaemon(configuration: configuration, store: store, outlet: outlet, logger: Logger(minimum: .error),
                               scheduler: loop, post: { [weak inbox] in inbox?.post($0) }, connections: factory, exitWhenDone: exitWhenDone,
                               writerConfiguration: StoreWriter.Configuration(retryBase: .milliseconds(5), retryCap: .milliseconds(20)),
                               onExit: { code in box.value.withLock { $0 = code } })
        }

        /// Runs the loop and what the writer posts for about `rounds` ms, whatever happens.
        func spin(_ rounds: Int = 50) {
            var left = rounds
            _ = settle { left -= 1; return left <= 0 }
        }

        /// Runs the loop and what the writer posts until `condition` holds (bounded: 2,000 rounds of ≤ 1 ms).
        @discardableResult
        func settle(until condition: () -> Bool = { false }) -> Bool {
            for _ in 0..<2000 {
                loop.run()
                let posted = inbox.take()
                for work in posted { loop.enqueue(work) }
                loop.run()
                if condition() { return true }
                if posted.isEmpty { usleep(1000) }
            }
            return condition()
        }

        var connection: MockXMPPConnection { factory.made[0] }

        /// Starts, and logs the first connection in.
        func startReady() {
            daemon.start()
            settle { !self.factory.made.isEmpty }
            connection.deliverReady()
            settle { self.connection.isOpen }
        }

        func submit(_ ids: [String]) {
            let items: [CCSDaemon.IntakeItem] = ids.enumerated().map { index, id in
                let line = #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
                return .message(try! DownstreamIntake.parse(line: line, now: Date()).get(), line: index + 1)
            }
            daemon.submit(items) {}
        }

        /// The events written, parsed; `name` filters.
        func events(_ name: String? = nil) -> [[String: JSONValue]] {
            outlet.lines.compactMap { try? JSONValue.parse($0).objectValue }
                .filter { name == nil || $0["event"] == .string(name!) }
        }

        func ack(_ id: String) {
            connection.deliver(Self.message(#"{"message_type":"ack","message_id":"\#(id)","from":"tok-\#(id)-APA91b"}"#))
        }
        func upstream(_ id: String) {
            connection.deliver(Self.message(#"{"message_id":"\#(id)","from":"DEVICE","category":"com.example","data":{"k":"v"}}"#))
        }
        static func message(_ json: String) -> XMLElement {
            XMLElement(name: "message", namespace: XMLNamespace.client, children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
        }
        func sentDownstream() -> [String] { connection.sent.filter { $0.contains("\"data\"") } }
        func sentAcks() -> [String] { connection.sent.filter { $0.contains("\"message_type\":\"ack\"") } }
    }

    @Test func noAcceptedLineAndNothingSentBeforeTheInsertCommits() {
        let h = Harness()
        h.startReady()
        h.store.holding = true
        h.submit(["m-1", "m-2"])
        h.spin()  // the commit is held
        #expect(h.events("accepted").isEmpty)
        #expect(h.sentDownstream().isEmpty)
        h.store.release()
        #expect(h.settle { h.events("accepted").count == 2 && h.sentDownstream().count == 2 })
        // Each line carries seq and time (RFC 3339, UTC, ms).
        let accepted = h.events("accepted")
        let seqs = accepted.compactMap { $0["seq"]?.intValue }
        #expect(seqs.count == 2 && seqs[1] == seqs[0] + 1)
        #expect(accepted.allSatisfy { ($0["time"]?.stringValue ?? "").wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil })
    }

    @Test func anUpstreamACKGoesOutOnlyAfterItsEventIsCommittedAndWritten() {
        let h = Harness()
        h.startReady()
        h.store.holding = true
        h.upstream("u-1")
        h.spin()
        #expect(h.events("upstream").isEmpty)
        #expect(h.sentAcks().isEmpty, "ACK before the hand-over was committed")
        h.store.release()
        #expect(h.settle { !h.sentAcks().isEmpty })
        // By the time the ACK went out, its line was flushed to the outlet.
        #expect(h.events("upstream").count == 1)
        #expect(h.outlet.buffered.isEmpty)
    }

    @Test func anUnavailableStoreRejectsRetryableDropsNothingAndRecovers() {
        let h = Harness()
        h.startReady()
        h.submit(["a"])
        #expect(h.settle { h.sentDownstream().count == 1 })
        h.store.failure = .full
        h.ack("a")  // its record fails: retried, not dropped
        h.submit(["b"])
        #expect(h.settle { h.events("rejected").count == 1 })
        let rejected = h.events("rejected")[0]
        #expect(rejected["message_id"] == .string("b") && rejected["retryable"] == .bool(true))
        // Written at once while the store is down: not journaled, so `time` but no `seq`.
        #expect(rejected["seq"] == nil && rejected["time"] != nil)
        #expect(h.events("acked").isEmpty)
        // While unavailable: intake refuses at once (retryable).
        h.submit(["c"])
        #expect(h.settle { h.events("rejected").count == 2 })
        #expect(h.events("rejected")[1]["retryable"] == .bool(true))
        h.store.failure = .none
        #expect(h.settle { h.events("acked").count == 1 })
        #expect(h.events("acked")[0]["message_id"] == .string("a"))
        h.submit(["d"])
        #expect(h.settle { h.events("accepted").contains { $0["message_id"] == .string("d") } })
        #expect(h.exited == nil)
    }

    @Test func aFatalStoreErrorExits5() {
        let h = Harness()
        h.startReady()
        h.store.failure = .corrupt
        h.submit(["a"])
        #expect(h.settle { h.exited != nil })
        #expect(h.exited == 5)
        #expect(h.events("accepted").isEmpty)
    }

    @Test func sigtermWithTheDurableStoreKeepsQueuedMessages() {
        let h = Harness(store: .sqlite)
        h.startReady()
        h.submit((0..<150).map { "q-\($0)" })
        #expect(h.settle { h.sentDownstream().count == 100 })  // the window
        h.daemon.signal(.terminate)
        for index in 0..<100 { h.ack("q-\(index)") }
        #expect(h.settle { h.exited != nil })
        #expect(h.exited == 0)
        #expect(h.events("acked").count == 100)
        #expect(h.events("nacked").isEmpty)
        #expect(h.sentDownstream().count == 100, "nothing more was sent after the stop")
        #expect((try? h.store.load(nowUnixMillis: StoreWriter.wallClockMillis()).live.count) == 50)
    }

    @Test func sigtermWithTheMemoryStoreNacksShutdownWhenTheGraceRunsOut() {
        let h = Harness(store: .memory)
        h.startReady()
        h.submit((0..<10).map { "s-\($0)" })
        #expect(h.settle { h.sentDownstream().count == 10 })
        h.daemon.signal(.terminate)
        h.spin()
        h.loop.advance(by: .seconds(3))  // past the 2 s grace
        #expect(h.settle { h.exited != nil })
        #expect(h.exited == 0)
        let nacks = h.events("nacked")
        #expect(nacks.count == 10)
        #expect(nacks.allSatisfy { $0["error"] == .string("SHUTDOWN") })
    }

    /// A run that stops between committing events and writing them (here its events file fails; a kill -9
    /// is the same) leaves them only in the journal. The next run writes them first, with their seq, so an
    /// upstream message that the store remembers as handed over (and whose redelivery is therefore ACKed
    /// without a second hand-over) still reaches the events file once.
    @Test func eventsJournaledButNotWrittenAreWrittenByTheNextRun() {
        let first = Harness()
        first.startReady()
        first.submit(["m-1"])
        #expect(first.settle { first.events("accepted").count == 1 })
        first.outlet.failNextFlush()
        first.upstream("u-7")
        #expect(first.settle { first.exited != nil })
        #expect(first.exited == 4)
        #expect(first.sentAcks().isEmpty, "no ACK for an upstream message whose line was not written")
        #expect(first.events("upstream").isEmpty)
        let writtenSeqs = Set(first.events().compactMap { $0["seq"]?.intValue })

        let second = Harness(sharing: first.store)
        second.startReady()
        let upstream = second.events("upstream")
        #expect(upstream.count == 1)
        #expect(upstream.first?["message_id"] == .string("u-7"))
        #expect(upstream.first?["seq"]?.intValue.map { !writtenSeqs.contains($0) } == true)
        // The replayed lines come before anything the second run journals itself, in seq order.
        let seqs = second.events().compactMap { $0["seq"]?.intValue }
        #expect(seqs == seqs.sorted())
        // The redelivery is ACKed, not handed over again.
        second.upstream("u-7")
        #expect(second.settle { second.sentAcks().count == 1 })
        #expect(second.events("upstream").count == 1)
        // Every seq the journal gave is in one events file or the other.
        let all = writtenSeqs.union(seqs)
        #expect(all.count == Int(all.max() ?? 0), "a seq is missing from both events files")
    }

    @Test func upstreamDedupeSurvivesARestart() {
        let first = Harness()
        first.startReady()
        first.upstream("u-7")
        #expect(first.settle { first.sentAcks().count == 1 })
        #expect(first.events("upstream").count == 1)

        let firstSeqs = first.events().compactMap { $0["seq"]?.intValue }

        // The next run on the same store: the redelivery is ACKed but not handed over again. (The first run
        // stopped without closing, so its last cursor may not be stored: its lines may come again, replayed
        // with their own seq, never as a new hand-over.)
        let second = Harness(sharing: first.store)
        second.startReady()
        second.upstream("u-7")
        #expect(second.settle { second.sentAcks().count == 1 })
        #expect(second.events("upstream").allSatisfy { event in firstSeqs.contains { $0 == event["seq"]?.intValue } })
    }
}

import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing

/// ccsd against every connection fault of the emulator (`ConnectionFault`), injected mid-load over real TLS on
/// loopback, each checked against the whole rule: every accepted message ends final exactly once, the
/// server sees no message again after acking it, no connection carries more than 100 unacked messages,
/// every upstream message is handed over exactly once, reconnects stay within what the backoff allows,
/// and traffic flows again once the fault is over (the second batch goes out after the fault).
@Suite struct FaultInjectionTests {
    static let backoff = Backoff(base: 0.1, cap: 0.4)

    /// Two connections, acks after 300 ms (so messages are in flight when the fault hits), a peer silent for
    /// 1.5 s found dead, a login unanswered for 2 s given up, refusals backed off 0.3 s … 0.6 s.
    static func makeRun(connections: Int = 2, exitWhenDone: Bool = true,
                        emulator adjust: (inout EmulatorConfiguration) -> Void = { _ in }) throws -> DaemonRun {
        try DaemonRun(exitWhenDone: exitWhenDone, emulator: {
            $0.ackLatencyMilliseconds = 300
            adjust(&$0)
        }, daemon: {
            $0.connections = connections
            $0.keepaliveSeconds = 0.5
            $0.deadPeerSeconds = 1.5
            $0.loginTimeoutSeconds = 2  // a login the server stops answering (half-open at login) ends in 2 s
            $0.reconnectBackoff = Self.backoff
            $0.refusedReconnectBackoff = Backoff(base: 0.3, cap: 0.6)
            $0.ackTimeoutSeconds = 3
            $0.shutdownGraceSeconds = 0.5
        })
    }

    /// The most connection attempts `slots` slots may make in `seconds` when every connection fails fast:
    /// per slot the first, then one per shortest wait of `backoff` (refusals wait longer, so this bounds them too).
    static func attemptBound(slots: Int, seconds: Double) -> Int {
        slots * ReconnectStormTests.maxAttempts(in: seconds, backoff: backoff)
    }

    /// Sends `count` upstream messages as soon as a connection is ready; returns their message_ids.
    static func upstream(_ run: DaemonRun, _ count: Int) async -> [String] {
        var ids: [String] = []
        await waitUntil("a ready connection for upstream traffic") {
            guard let sent = try? run.emulator.sendUpstream(count: count) else { return false }
            ids = sent.messageIDs
            return true
        }
        return ids
    }

    /// The connection to fault: a ready one with messages in flight, or, when the polls missed them (as they
    /// may on a loaded machine), any ready one once `batch` downstream messages were answered.
    static func faultTarget(_ run: DaemonRun, answeredAtLeast batch: Int) async -> Int {
        var target = 0
        await waitUntil("a ready connection to fault", timeout: 20) {
            let ready = run.emulator.connectionInfos().filter { $0.phase == "ready" }
            if let busy = ready.first(where: { $0.unacked > 0 }) {
                target = busy.id
                return true
            }
            let stats = run.emulator.stats()
            guard stats.acked + stats.nackedTotal >= batch, let any = ready.first else { return false }
            target = any.id
            return true
        }
        return target
    }

    /// The whole rule, once ccsd has exited (after `endInput`).
    static func expectWholeRule(_ run: DaemonRun, downstream: Int, upstream: [String], started: Date,
                                slots: Int = 2, sourceLocation: SourceLocation = #_sourceLocation) async {
        await waitUntil("ccsd done", timeout: 30, sourceLocation: sourceLocation) { run.exited != nil }
        let elapsed = Date().timeIntervalSince(started)
        #expect(run.exited == 0, sourceLocation: sourceLocation)
        let finals = run.finalCounts
        #expect(finals.count == downstream, "\(downstream - finals.count) accepted messages never final", sourceLocation: sourceLocation)
        #expect(finals.values.allSatisfy { $0 == 1 }, "a message was final twice", sourceLocation: sourceLocation)
        let stats = run.emulator.stats()
        #expect(stats.duplicateMessageIDs == 0, "messages resent after their ack", sourceLocation: sourceLocation)
        #expect(stats.flowControlViolations == 0, sourceLocation: sourceLocation)
        #expect(stats.maxUnackedObserved <= 100, sourceLocation: sourceLocation)
        var handedOver: [String: Int] = [:]
        for event in run.events("upstream") {
            if let id = event["message_id"]?.stringValue { handedOver[id, default: 0] += 1 }
        }
        for id in upstream {
            #expect(handedOver[id] == 1, "upstream \(id) handed over \(handedOver[id] ?? 0) times", sourceLocation: sourceLocation)
        }
        let bound = attemptBound(slots: slots, seconds: elapsed)
        #expect(stats.connectionsAccepted <= bound,
                "\(stats.connectionsAccepted) connections in \(elapsed) s; the backoff allows \(bound)", sourceLocation: sourceLocation)
    }
}

extension FaultInjectionTests {
    /// Faults on a live connection, one after the other (each run takes about 2 s).
    @Suite(.serialized) struct LiveConnection {
        // MARK: Faults on a live connection

        /// Batch, upstream, the fault on a connection with messages in flight, batch, upstream, end.
        @Test(arguments: ["close", "rst", "half-open", "cut-stanza", "corrupt-record", "split-records", "slow-read:1"])
        func aFaultOnALiveConnectionLosesNothing(mode: String) async throws {
            let fault = try #require(ConnectionFault(parsing: mode))
            let started = Date()
            let run = try FaultInjectionTests.makeRun()
            defer { run.stop(); run.cleanUp() }
            run.send(DaemonRun.messages(200, prefix: "a"))
            let target = await FaultInjectionTests.faultTarget(run, answeredAtLeast: 200)
            var upstream = try run.emulator.sendUpstream(count: 10, connection: target).messageIDs
            try run.emulator.injectFault(fault, connection: target)
            switch fault {
            case .splitRecords, .slowRead:
                break  // the connection survives these
            default:
                await waitUntil("the faulted connection is gone") { !run.emulator.connectionInfos().contains { $0.id == target } }
            }
            run.send(DaemonRun.messages(200, prefix: "b"))
            upstream += await FaultInjectionTests.upstream(run, 10)
            run.endInput()
            await FaultInjectionTests.expectWholeRule(run, downstream: 400, upstream: upstream, started: started)
            let stats = run.emulator.stats()
            #expect(stats.faultsInjected == 1)
        }
    }
}

extension FaultInjectionTests {
    /// Stream errors of every condition, one group after the other.
    @Suite(.serialized) struct StreamErrors {
        /// Every stream error condition of RFC 6120 §4.9.3 on a busy connection: five runs of five conditions,
        /// one after the other on whichever connection is busy.
        @Test(arguments: 0..<5)
        func aStreamErrorOfEveryConditionLosesNothing(group: Int) async throws {
            let conditions = ConnectionFault.streamErrorConditions.enumerated().filter { $0.offset % 5 == group }.map(\.element)
            let started = Date()
            let run = try FaultInjectionTests.makeRun()
            defer { run.stop(); run.cleanUp() }
            var upstream: [String] = []
            for (index, condition) in conditions.enumerated() {
                run.send(DaemonRun.messages(100, prefix: "se\(index)"))
                let target = await FaultInjectionTests.faultTarget(run, answeredAtLeast: 100 * (index + 1))
                upstream += (try? run.emulator.sendUpstream(count: 5, connection: target).messageIDs) ?? []
                try run.emulator.injectFault(.streamError(condition: condition), connection: target)
            }
            upstream += await FaultInjectionTests.upstream(run, 5)
            run.endInput()
            await FaultInjectionTests.expectWholeRule(run, downstream: 100 * conditions.count, upstream: upstream, started: started)
            #expect(run.emulator.stats().faultsInjected == conditions.count)
        }
    }
}

extension FaultInjectionTests {
    /// A server that drops every login, in each form (in parallel).
    @Suite struct AfterLogin {
        // MARK: Faults armed for the next connections

        /// A server that drops the stream right after every login, armed at run time for the next 1000 logins:
        /// ccsd backs off (attempts within the backoff's bound, nothing final meanwhile); once the fault is
        /// cleared, it recovers and delivers everything.
        @Test(arguments: ["close", "rst", "half-open", "cut-stanza", "corrupt-record", "stream-error:conflict"])
        func aDropAfterEveryLoginIsBackedOffAndRecovers(mode: String) async throws {
            let fault = try #require(ConnectionFault(parsing: mode))
            let started = Date()
            let run = try FaultInjectionTests.makeRun(connections: 1)
            defer { run.stop(); run.cleanUp() }
            await waitUntil("logged in") { run.emulator.connectionInfos().contains { $0.phase == "ready" } }
            run.emulator.armFault(fault, connections: 1000)
            try run.emulator.injectFault(.close)
            run.send(DaemonRun.messages(50, prefix: "a"))
            try await Task.sleep(for: .seconds(1.5))
            let stormStats = run.emulator.stats()
            let stormBound = FaultInjectionTests.attemptBound(slots: 1, seconds: Date().timeIntervalSince(started))
            #expect(stormStats.connectionsAccepted >= 2, "ccsd did not come back after the first drop")
            #expect(stormStats.connectionsAccepted <= stormBound,
                    "\(stormStats.connectionsAccepted) connections; the backoff allows \(stormBound)")
            run.emulator.clearFaults()
            let upstream = await FaultInjectionTests.upstream(run, 5)
            run.endInput()
            await FaultInjectionTests.expectWholeRule(run, downstream: 50, upstream: upstream, started: started, slots: 1)
        }
    }
}

extension FaultInjectionTests {
    /// SASL failures of every condition (quick: these run in parallel).
    @Suite struct SASLFailures {
        /// Every SASL failure condition of RFC 6120 §6.5, for the next two logins: the two that say "try again"
        /// (`aborted`, `temporary-auth-failure`) are retried with backoff and the run completes; every other
        /// one stops ccsd (exit 3) after one attempt per slot, with no message reported final that was not.
        @Test(arguments: ConnectionFault.saslFailureConditions)
        func aSASLFailureOfEveryConditionBacksOffOrStops(condition: String) async throws {
            let started = Date()
            let run = try FaultInjectionTests.makeRun(connections: 1)
            defer { run.stop(); run.cleanUp() }
            await waitUntil("logged in") { run.emulator.connectionInfos().contains { $0.phase == "ready" } }
            run.emulator.armFault(.saslFailure(condition: condition), connections: 2)
            run.send(DaemonRun.messages(50, prefix: "a"))
            await waitUntil("some messages in flight") { run.emulator.stats().downstreamReceived > 0 }
            try run.emulator.injectFault(.close)
            let retried = condition == "aborted" || condition == "temporary-auth-failure"
            if retried {
                let upstream = await FaultInjectionTests.upstream(run, 5)
                run.endInput()
                await FaultInjectionTests.expectWholeRule(run, downstream: 50, upstream: upstream, started: started, slots: 1)
                #expect(run.emulator.stats().authFailures == 2)
            } else {
                await waitUntil("ccsd stops", timeout: 15) { run.exited != nil }
                #expect(run.exited == 3)
                let stats = run.emulator.stats()
                #expect(stats.authFailures == 1, "ccsd retried a login the server refused for good")
                #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
                #expect(stats.duplicateMessageIDs == 0)
            }
        }
    }
}

extension FaultInjectionTests {
    /// Slow reads, and the control command.
    @Suite struct SlowReadsAndControl {
        // MARK: Slow reads

        /// The server stops reading for 2 s while it floods ccsd with upstream messages, so ccsd's ACKs back up
        /// behind a peer that does not read. ccsd's loop stays responsive meanwhile (a snapshot is answered,
        /// downstream traffic on the other connection is acked), and once the server reads again every upstream
        /// message is handed over once and ACKed, every downstream message final once.
        @Test func slowReadsUnderAnUpstreamFloodNeitherWedgeNorLose() async throws {
            let started = Date()
            let run = try FaultInjectionTests.makeRun()
            defer { run.stop(); run.cleanUp() }
            await waitUntil("both connections ready") {
                run.emulator.connectionInfos().filter { $0.phase == "ready" }.count == 2
            }
            let target = try #require(run.emulator.connectionInfos().first { $0.phase == "ready" }).id
            try run.emulator.injectFault(.slowRead(seconds: 2), connection: target)
            var upstream: [String] = []
            for _ in 0..<10 { upstream += try run.emulator.sendUpstream(count: 500, connection: target).messageIDs }
            run.send(DaemonRun.messages(100, prefix: "a"))
            let daemon = run.daemon
            await waitUntil("ccsd's loop answers while the server does not read") {
                run.loop.submitAndWait { daemon.snapshot() }.connections.count == 2
            }
            run.endInput()
            await FaultInjectionTests.expectWholeRule(run, downstream: 100, upstream: upstream, started: started)
            let stats = run.emulator.stats()
            #expect(stats.upstreamAcked + stats.upstreamRedelivered >= upstream.count)
        }

        /// `split-records` armed for the next connection applies from the accept: the TLS handshake goes one
        /// record per send, and the whole login and traffic one byte per record.
        @Test func splitRecordsFromTheAcceptCarriesTheLoginAndTraffic() async throws {
            let started = Date()
            let run = try FaultInjectionTests.makeRun(connections: 1)
            defer { run.stop(); run.cleanUp() }
            await waitUntil("logged in") { run.emulator.connectionInfos().contains { $0.phase == "ready" } }
            run.emulator.armFault(.splitRecords, connections: 1)
            try run.emulator.injectFault(.close)
            await waitUntil("logged in on the split connection") {
                run.emulator.connectionInfos().contains { $0.phase == "ready" && $0.id == 2 }
            }
            run.send(DaemonRun.messages(20, prefix: "s"))
            let upstream = await FaultInjectionTests.upstream(run, 5)
            run.endInput()
            await FaultInjectionTests.expectWholeRule(run, downstream: 20, upstream: upstream, started: started, slots: 1)
            #expect(run.emulator.stats().faultsInjected == 2)
            #expect(run.emulator.stats().connectionsAccepted == 2)
        }

        // MARK: Control channel

        @Test func faultCommandsAnswerAndRefuse() throws {
            let emulator = CCSEmulator(configuration: EmulatorConfiguration(
                listen: [.init(host: "127.0.0.1", port: 0)], senderID: "1", serverKey: "k"))
            #expect(emulator.handle(commandLine: "fault rst next 3") == #"{"ok":true,"armed":3}"#)
            #expect(emulator.handle(commandLine: "fault sasl-failure:aborted next 1") == #"{"ok":true,"armed":1}"#)
            #expect(emulator.handle(commandLine: "fault clear") == #"{"ok":true}"#)
            #expect(emulator.handle(commandLine: "fault rst").contains(#""ok":false"#))  // no live connection
            #expect(emulator.handle(commandLine: "fault sasl-failure:aborted").contains("next N"))
            #expect(emulator.handle(commandLine: "fault bogus").contains("unknown fault bogus"))
            #expect(emulator.handle(commandLine: "fault rst next 0").contains(#""ok":false"#))
            for text in ["close", "rst", "half-open", "cut-stanza", "corrupt-record", "split-records", "slow-read:2.5",
                         "stream-error:conflict", "sasl-failure:not-authorized"] {
                #expect(ConnectionFault(parsing: text)?.description == text)
            }
            for text in ["slow-read:0", "slow-read:x", "stream-error:", "stream-error:Bad", "rst:1", "sasl-failure"] {
                #expect(ConnectionFault(parsing: text) == nil, "\(text) parsed")
            }
        }
    }
}

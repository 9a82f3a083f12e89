import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing
import CorpusFixtures

/// ccsd end to end against the emulator over real TLS on loopback.
@Suite(.serialized) struct EndToEndTests {
    @Test func drainFailoverUnderLoadLosesNothing() async throws {
        // Acks take 3 s and the drain grace is 30 ms, so messages are still in flight when the server closes
        // the draining stream: they must be resent elsewhere with the same message_id. The drain goes to a
        // connection seen with messages in flight; the load goes on in batches of 200 until it could be
        // drained, so a loaded machine that runs this task late still drains mid-load. (With acks after 1 s,
        // a loaded machine once let the acks of the connection seen busy arrive before its drain: nothing was
        // left to resend, and ccsd, done, exited before the replacement connected.)
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 3000; $0.drainGraceMilliseconds = 30 },
                                daemon: { $0.connections = 2 })
        defer { run.stop(); run.cleanUp() }
        var ids: [String] = []
        var drained: Int?
        for batch in 0..<30 where drained == nil {
            let messages = DaemonRun.messages(200, prefix: "m\(batch)")
            ids += (0..<200).map { "m\(batch)-\($0)" }
            run.send(messages)
            await waitUntil("batch \(batch) under way", timeout: 20) { run.emulator.stats().downstreamReceived >= ids.count - 100 }
            if let busy = run.emulator.connectionInfos().first(where: { $0.phase == "ready" && $0.unacked > 0 }) {
                drained = try? run.emulator.drain(connection: busy.id)
            }
        }
        let drainedID = try #require(drained, "no connection was seen with messages in flight")
        // The input ends only after the drain.
        run.endInput()
        await waitUntil("ccsd done", timeout: 60) { run.exited != nil }
        #expect(run.exited == 0)
        let finals = run.finalCounts
        #expect(Set(finals.keys) == Set(ids))
        #expect(finals.values.allSatisfy { $0 == 1 }, "a message was final more than once")
        #expect(Set(run.events("acked").compactMap { $0["message_id"]?.stringValue }) == Set(ids))
        let stats = run.emulator.stats()
        #expect(stats.flowControlViolations == 0)
        #expect(stats.maxUnackedObserved <= 100)
        #expect(stats.duplicateMessageIDs == 0)
        #expect(stats.resends > 0, "the drain should have left messages in flight to resend")
        // The draining connection was reported, and a replacement opened on the secondary endpoint.
        let connections = run.events("connection")
        #expect(connections.contains { $0["id"] == .int(Int64(drainedID)) && $0["state"] == .string("draining") })
        let secondary = ":\(run.emulator.ports[1])"
        #expect(connections.contains { $0["state"] == .string("connected") && ($0["endpoint"]?.stringValue?.hasSuffix(secondary) ?? false) })
    }

    @Test func connectionKilledWithFullWindowResendsAllAndAcksThem() async throws {
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 5000 }, daemon: { $0.connections = 1 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(100, prefix: "k"))
        run.endInput()
        await waitUntil("100 pending", timeout: 20) { run.emulator.stats().downstreamReceived >= 100 }
        #expect(run.emulator.stats().maxUnackedObserved == 100)
        try run.emulator.disconnect()
        await waitUntil("ccsd done", timeout: 60) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.events("acked").count == 100)
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
        let stats = run.emulator.stats()
        #expect(stats.resends == 100)
        #expect(stats.flowControlViolations == 0)
        #expect(stats.duplicateMessageIDs == 0)
    }

    @Test func flowControlIsNeverExceeded() async throws {
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 5 }, daemon: { $0.connections = 2 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(3000, prefix: "f"))
        run.endInput()
        await waitUntil("ccsd done", timeout: 60) { run.exited != nil }
        let stats = run.emulator.stats()
        #expect(stats.acked == 3000)
        #expect(stats.flowControlViolations == 0)
        #expect(stats.maxUnackedObserved <= 100)
        #expect(stats.maxUnackedObserved > 10, "the window should have been used")
    }

    @Test func upstreamArrivesByteExactAndIsAckedAfterHandover() async throws {
        let run = try DaemonRun(exitWhenDone: false)
        defer { run.stop(); run.cleanUp() }
        // Bound, not just authenticated: the emulator sends upstream only on a ready connection.
        await waitUntil("logged in", timeout: 20) { run.emulator.connectionInfos().contains { $0.phase == "ready" } }
        let sent = try run.emulator.sendUpstream(count: 3)
        await waitUntil("upstream ACKed", timeout: 20) { run.emulator.stats().upstreamAcked == 3 }
        let upstream = run.events("upstream")
        #expect(upstream.compactMap { $0["message_id"]?.stringValue } == sent.messageIDs)
        for event in upstream {
            #expect(event["data"]?["text"] == .string(CCSEmulator.upstreamText))
            #expect(event["category"] == .string("com.example.app"))
        }
        // ACKed on the connection they arrived on.
        #expect(run.emulator.clientAcks().filter { sent.messageIDs.contains($0.messageID) }.allSatisfy { $0.connection == sent.connection })
    }

    @Test func receiptsAreReportedAndAckedWithTheirDr2ID() async throws {
        let run = try DaemonRun(exitWhenDone: false)
        defer { run.stop(); run.cleanUp() }
        run.send([#"{"to":"tok-r","message_id":"r-1","data":{"a":"b"},"delivery_receipt_requested":true}"#])
        await waitUntil("receipt ACKed", timeout: 20) { run.emulator.stats().receiptsAcked == 1 }
        #expect(run.emulator.clientAcks().contains { $0.messageID == "dr2:r-1" })
        let receipt = try #require(run.events("receipt").first)
        #expect(receipt["message_id"] == .string("dr2:r-1"))
        #expect(receipt["original_message_id"] == .string("r-1"))
        #expect(receipt["status"] == .string("MESSAGE_SENT_TO_DEVICE"))
    }

    @Test func outcomesRetriesAndInvalidTokensAreReported() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        run.send([
            #"{"to":"flaky-1","message_id":"o-flaky","data":{"a":"b"}}"#,
            #"{"to":"bad-1","message_id":"o-bad","data":{"a":"b"}}"#,
            #"{"to":"rate-1","message_id":"o-rate","data":{"a":"b"}}"#,
            #"{"to":"canon-1","message_id":"o-canon","data":{"a":"b"}}"#,
            #"{"to":"ok-1","message_id":"o-zero","data":{"a":"b"},"time_to_live":0}"#,
            #"{"to":"ok-2","data":{"a":"b"}}"#,
            #"{"to":"ok-3","message_id":"o-bad-field","time_to_life":5}"#,
        ])
        run.endInput()
        await waitUntil("ccsd done", timeout: 30) { run.exited != nil }
        let nacks = run.events("nacked")
        #expect(nacks.contains { $0["message_id"] == .string("o-flaky") && $0["error"] == .string("SERVICE_UNAVAILABLE") && $0["final"] == .bool(false) })
        #expect(nacks.contains { $0["message_id"] == .string("o-rate") && $0["error"] == .string("DEVICE_MESSAGE_RATE_EXCEEDED") && $0["final"] == .bool(false) })
        #expect(nacks.contains { $0["message_id"] == .string("o-bad") && $0["error"] == .string("BAD_REGISTRATION") && $0["final"] == .bool(true) && $0["invalid_token"] == .bool(true) })
        let acked = run.events("acked")
        let ackedIDs = Set(acked.compactMap { $0["message_id"]?.stringValue })
        #expect(ackedIDs.isSuperset(of: ["o-flaky", "o-rate", "o-canon", "o-zero"]))
        #expect(acked.first { $0["message_id"] == .string("o-canon") }?["registration_id"] == .string("canonical-canon-1"))
        // A message without a message_id got one, and ended like the rest.
        let assigned = run.events("accepted").compactMap { $0["message_id"]?.stringValue }.filter { !$0.hasPrefix("o-") }
        #expect(assigned.count == 1)
        #expect(run.finalCounts[assigned[0]] == 1)
        // The invalid line was rejected on its field and never reached the emulator.
        let rejected = try #require(run.events("rejected").first)
        #expect(rejected["field"] == .string("time_to_life"))
        #expect(rejected["message_id"] == .string("o-bad-field"))
        #expect(run.emulator.stats().downstreamReceived == 6 + 2)  // six valid messages, two retried once
    }

    /// With the durable store (the default) the accepted messages stay stored (no AUTHENTICATION_FAILED
    /// nacks): once the operator fixes the key, the next start with the same state directory sends them.
    @Test func authenticationFailureStopsWithAClearErrorAndNoStorm() async throws {
        let stateDirectory = NSTemporaryDirectory() + "ccsd-e2e-state-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        let run = try DaemonRun(key: "not-the-key", stateDirectory: stateDirectory, daemon: { $0.connections = 2 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(3, prefix: "a"))
        await waitUntil("ccsd stops", timeout: 20) { run.exited != nil }
        #expect(run.exited == 3)
        // Each connection tried once; nothing retried after the failure.
        let failuresAtStop = run.emulator.stats().authFailures
        #expect(failuresAtStop >= 1 && failuresAtStop <= 2)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(run.emulator.stats().authFailures == failuresAtStop)
        // Nothing accepted ended: it is kept for the next start.
        let accepted = run.events("accepted").compactMap { $0["message_id"]?.stringValue }
        #expect(run.events("nacked").isEmpty)
        #expect(run.finalCounts.isEmpty)
        // The key is in no event.
        #expect(!((try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? "").contains("not-the-key"))

        // The key fixed: the same state directory resumes them, each acked once.
        let fixed = try DaemonRun(stateDirectory: stateDirectory)
        defer { fixed.stop(); fixed.cleanUp() }
        fixed.endInput()
        await waitUntil("ccsd exits once the kept messages are final", timeout: 30) { fixed.exited != nil }
        #expect(fixed.exited == 0)
        #expect(fixed.finalCounts == Dictionary(uniqueKeysWithValues: accepted.map { ($0, 1) }))
        #expect(fixed.events("acked").count == accepted.count)
    }

    /// With `--store memory` nothing survives the process: every accepted message is told its fate
    /// (nacked AUTHENTICATION_FAILED).
    @Test func authenticationFailureWithTheMemoryStoreNacksWhatWasAccepted() async throws {
        let run = try DaemonRun(key: "not-the-key", store: .memory, daemon: { $0.connections = 2 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(3, prefix: "a"))
        await waitUntil("ccsd stops", timeout: 20) { run.exited != nil }
        #expect(run.exited == 3)
        for id in ["a-0", "a-1", "a-2"] where run.events("accepted").contains(where: { $0["message_id"] == .string(id) }) {
            #expect(run.finalCounts[id] == 1)
        }
        #expect(run.events("nacked").allSatisfy { $0["error"] == .string("AUTHENTICATION_FAILED") })
        // The key is in no event.
        #expect(!((try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? "").contains("not-the-key"))
    }
}

/// SIGTERM: no new messages, outstanding ones get the grace, the rest end as SHUTDOWN (never silently).
@Suite(.serialized) struct GracefulStopTests {
    @Test func inFlightMessagesFinishWithinTheGrace() async throws {
        let run = try DaemonRun(exitWhenDone: false, emulator: { $0.ackLatencyMilliseconds = 300 },
                                daemon: { $0.shutdownGraceSeconds = 5 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(50, prefix: "g"))
        await waitUntil("in flight", timeout: 20) { run.emulator.stats().downstreamReceived == 50 }
        let daemon = run.daemon
        run.loop.execute { daemon.signal(.terminate) }
        await waitUntil("ccsd exits", timeout: 20) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.events("acked").count == 50)
        #expect(run.events("nacked").isEmpty)
    }

    /// `--store memory`: what is not final when the grace ends would be lost, so it ends `nacked` SHUTDOWN.
    @Test func whatTheGraceCannotFinishEndsAsShutdown() async throws {
        let run = try DaemonRun(exitWhenDone: false, store: .memory, emulator: { $0.ackLatencyMilliseconds = 10_000 },
                                daemon: { $0.shutdownGraceSeconds = 0.3; $0.window = 20 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(50, prefix: "s"))
        await waitUntil("window full", timeout: 20) { run.emulator.stats().downstreamReceived == 20 }
        let daemon = run.daemon
        run.loop.execute { daemon.signal(.terminate) }
        await waitUntil("ccsd exits", timeout: 20) { run.exited != nil }
        let nacks = run.events("nacked")
        #expect(nacks.count == 50)
        #expect(nacks.allSatisfy { $0["error"] == .string("SHUTDOWN") && $0["final"] == .bool(true) })
        #expect(run.finalCounts.count == 50)
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
    }
}

/// Issue 4's "done when": every corpus line gives its expected result through `ccsd run`, and invalid
/// messages never reach the server.
@Suite struct CorpusEndToEndTests {
    @Test func everyCorpusLineGivesItsExpectedResultThroughCCSD() async throws {
        let cases = try DownstreamCorpus.loaded.get()
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        run.send(cases.map(\.line))
        run.endInput()
        await waitUntil("ccsd done", timeout: 30) { run.exited != nil }
        #expect(run.exited == 0)
        let rejected = run.events("rejected")
        let invalid = cases.filter { !$0.valid }
        #expect(rejected.count == invalid.count)
        // Rejections come in input order; each names the field the corpus expects.
        for (entry, event) in zip(invalid, rejected) {
            #expect(event["field"] == .string(entry.field ?? ""), "\(entry)")
            #expect(event["line"] == .int(Int64(entry.number)), "\(entry)")
        }
        let valid = cases.filter(\.valid).count
        #expect(run.events("accepted").count == valid)
        #expect(run.events("acked").count == valid)
        #expect(run.emulator.stats().downstreamReceived == valid)
    }
}

/// Intake edge cases through the real reader: each bad line is its own clear rejection and the rest flow on.
@Suite struct IntakeEdgeCaseTests {
    @Test func badLinesAreRejectedOneByOneAndTheRestFlowOn() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        var input = Data()
        input.append(Data(#"{"to":"tok-1","message_id":"ok-1","data":{"a":"b"}}"#.utf8 + [0x0A]))
        input.append(Data("\n   \n".utf8))                                                  // blank lines: skipped
        input.append(Data(String(repeating: "x", count: 70_000).utf8 + [0x0A]))             // over 64 KiB
        input.append(Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D, 0x0A]))                      // invalid UTF-8
        input.append(Data(#"{"to":"tok-2","message_id":"ok-2","data":{"a":"b"}}"#.utf8 + [0x0A]))
        input.append(Data("[1,2,3]\n".utf8))                                                // not an object
        input.append(Data(#"{"to":"tok-3","message_id":"ok-3","data":{"a":"b"}}"#.utf8))    // no final newline
        run.inputWriter.write(input)
        run.endInput()
        await waitUntil("ccsd done", timeout: 20) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(Set(run.events("acked").compactMap { $0["message_id"]?.stringValue }) == ["ok-1", "ok-2", "ok-3"])
        let rejected = run.events("rejected")
        #expect(rejected.compactMap { $0["line"]?.intValue } == [4, 5, 7])
        #expect(rejected.allSatisfy { $0["field"] == .string("") })
        #expect(rejected.first?["error"]?.stringValue?.contains("longer than 65536 bytes") == true)
        #expect(rejected.last?["error"]?.stringValue?.contains("not a JSON object") == true)
    }
}

import CCS
import CCSEmulator
import Foundation
import Store
import Testing

/// The crash test of issue 8, scaled down to fit the test run (`scripts/crash-test` is the full one):
/// the built `ccsd` binary against ONE in-process emulator, killed with SIGKILL (or stopped with SIGTERM)
/// at random moments while messages are queued, in flight, retried or draining and upstream messages and
/// receipts flow; restarted each time with the same state directory and the same input (feeding it again
/// is safe: stored ids are answered as duplicates); then run to the end with `--exit-when-done`.
///
/// Checks marked "resume" need the durable store wired into `ccsd run` (`--store sqlite`): without it a
/// restart forgets what was accepted, and they fail.
@Suite(.serialized) struct CrashRecoveryTests {
    @Test func killNineAtRandomMomentsLosesNothing() throws {
        let outcome = try CrashTest(messages: 1_500, signalledRuns: 5, signal: SIGKILL, seed: 8_001).run()
        outcome.expectNothingLost()
    }

    @Test func sigtermEndsEveryRunWithExitZeroAndLosesNothing() throws {
        let outcome = try CrashTest(messages: 1_500, signalledRuns: 3, signal: SIGTERM, seed: 8_002).run()
        outcome.expectNothingLost()
        #expect(outcome.runs.filter { $0.kind == .signalled }.allSatisfy { $0.status == 0 },
                "every SIGTERM run exits 0: \(outcome.runs.map(\.summary))")
    }
}


/// One crash test: an emulator, a state directory, an input file, and the ccsd runs against them.
final class CrashTest {
    static let senderID = "123456789012"
    let messages: Int
    let signalledRuns: Int
    let signal: Int32
    let seed: UInt64
    var random: SplitMix64
    let directory: String
    let serverKey = "crash-key-\(UUID().uuidString)"

    struct RunRecord {
        enum Kind { case signalled, final, settle }
        var index: Int
        var kind: Kind
        var eventsPath: String
        var logPath: String
        /// Exit status; nil when ccsd died of a signal or had to be killed after the bound.
        var status: Int32?
        /// ccsd ended by itself before it was signalled (a crash, or an exit code it should not give).
        var exitedEarly = false
        var chaos: [String] = []
        var summary: String {
            "run \(index) \(kind): status \(status.map(String.init) ?? "signal")\(exitedEarly ? " (exited early)" : "") chaos \(chaos)"
        }
    }

    init(messages: Int, signalledRuns: Int, signal: Int32, seed: UInt64) throws {
        self.messages = messages
        self.signalledRuns = signalledRuns
        self.signal = signal
        self.seed = seed
        random = SplitMix64(seed: seed)
        directory = NSTemporaryDirectory() + "ccsd-crash-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
    }

    /// Starts the emulator, writes the input, runs ccsd `signalledRuns` times plus the final run (and a
    /// settle run if upstream messages are still un-ACKed), stops everything it started, and reads the result.
    func run() throws -> CrashOutcome {
        var configuration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0), .init(host: "127.0.0.1", port: 0)],
            senderID: Self.senderID, serverKey: serverKey, caDirectory: directory, ackLatencyMilliseconds: 30)
        configuration.nackRules = [NackRule(prefix: "srv-", code: .internalServerError, firstAttemptOnly: true),
                                   NackRule(prefix: "down-", code: .serviceUnavailable)] + NackRule.defaults
        configuration.drainGraceMilliseconds = 200
        configuration.receipts = true
        let emulator = CCSEmulator(configuration: configuration)
        let ports = try emulator.start()
        defer {
            killLeftoverProcesses(matching: directory)
            emulator.stop()
            // CCSD_CRASH_TEST_KEEP=1 keeps the runs' events and logs for a look.
            if ProcessInfo.processInfo.environment["CCSD_CRASH_TEST_KEEP"] == "1" {
                print("crash test files kept in \(directory)")
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        try Data(serverKey.utf8).write(to: URL(fileURLWithPath: directory + "/server-key"))
        // Short backoffs and grace so the runs fit the test command; the rules are those of the full test.
        try Data("""
            {"sender_id":"\(Self.senderID)","connections":2,"window":100,"max_attempts":4,
             "retry_initial_seconds":0.2,"retry_max_seconds":0.8,"rate_limit_initial_seconds":0.2,
             "rate_limit_max_seconds":0.8,"reconnect_initial_seconds":0.1,"reconnect_max_seconds":0.5,
             "shutdown_grace_seconds":2}
            """.utf8).write(to: URL(fileURLWithPath: directory + "/ccsd.json"))
        let inputIDs = try writeInput()

        var runs: [RunRecord] = []
        for index in 1...signalledRuns {
            runs.append(try signalledRun(index: index, emulator: emulator, ports: ports, inputIDs: inputIDs))
        }
        var final = record(index: signalledRuns + 1, kind: .final)
        let finalProcess = try start(final, ports: ports, exitWhenDone: true)
        final.status = wait(finalProcess, timeout: 40)
        runs.append(final)
        let stats = emulator.stats()
        if stats.upstreamAcked < stats.upstreamSent {
            var settle = record(index: signalledRuns + 2, kind: .settle)
            let process = try start(settle, ports: ports, exitWhenDone: false)
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning, Date() < deadline {
                let now = emulator.stats()
                if now.upstreamAcked >= now.upstreamSent, now.liveConnections > 0 { break }
                usleep(50_000)
            }
            usleep(300_000)
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                settle.status = wait(process, timeout: 20)
            } else {
                settle.exitedEarly = true
                settle.status = wait(process, timeout: 1)
            }
            runs.append(settle)
        }
        // The store's own record, read with every ccsd stopped: the journal and what is still live.
        let store = try SQLiteMessageStore(directory: directory + "/state")
        defer { store.close() }
        let live = try store.load(nowUnixMillis: Int64(Date().timeIntervalSince1970 * 1000)).live.map(\.messageID)
        let journal = try store.events(after: 0, limit: Int.max)
        return CrashOutcome(seed: seed, inputIDs: inputIDs, runs: runs, ids: emulator.messageIDs(),
                            stats: emulator.stats(), journal: journal, liveAfterwards: live)
    }

    /// The downstream messages: receipts requested, transient nacks (retried), final nacks, short time_to_live.
    private func writeInput() throws -> [String] {
        var lines: [String] = [], ids: [String] = []
        for i in 0..<messages {
            let id = String(format: "ct-%06d", i)
            let token = "tok\(i % 97):APA91b\(i)"
            let r = Double.random(in: 0..<1, using: &random)
            var to = token, ttl = 600, extra = ""
            switch r {
            case ..<0.10: extra = #","delivery_receipt_requested":true"#
            case ..<0.15: to = "flaky-" + token
            case ..<0.18: to = "rate-" + token
            case ..<0.21: to = "srv-" + token
            case ..<0.215: to = "down-" + token
            case ..<0.225: to = "bad-" + token
            case ..<0.245: ttl = Int.random(in: 1...2, using: &random)
            default: break
            }
            lines.append(#"{"to":"\#(to)","message_id":"\#(id)","data":{"n":"\#(i)"},"time_to_live":\#(ttl)\#(extra)}"#)
            ids.append(id)
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/input.jsonl"))
        return ids
    }

    private func record(index: Int, kind: RunRecord.Kind) -> RunRecord {
        RunRecord(index: index, kind: kind, eventsPath: directory + "/events-\(index).jsonl",
                  logPath: directory + "/ccsd-\(index).log")
    }

    private func start(_ run: RunRecord, ports: [Int], exitWhenDone: Bool) throws -> Process {
        let process = Process()
        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["run", "--config", directory + "/ccsd.json",
                             "--endpoint", "localhost:\(ports[0])", "--endpoint", "localhost:\(ports[1])",
                             "--ca-file", directory + "/ca.pem", "--server-key-file", directory + "/server-key",
                             "--input", directory + "/input.jsonl", "--events", run.eventsPath,
                             "--state-dir", directory + "/state", "--store", "sqlite"]
            + (exitWhenDone ? ["--exit-when-done"] : [])
        process.environment = [:]
        _ = FileManager.default.createFile(atPath: run.logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: run.logPath)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Waits at most `timeout` seconds; SIGKILL by PID after that. The exit status, or nil (signal or killed).
    private func wait(_ process: Process, timeout: Double) -> Int32? {
        process.exitStatus(waitingAtMost: timeout)
    }

    private func signalledRun(index: Int, emulator: CCSEmulator, ports: [Int], inputIDs: [String]) throws -> RunRecord {
        var run = record(index: index, kind: .signalled)
        let process = try start(run, ports: ports, exitWhenDone: false)
        let started = Date()
        // Early kills land in the first runs' intake and hand-over bursts (commits in flight, lines unwritten).
        let delay = signal == SIGKILL ? Double.random(in: 0.1...1.0, using: &random) : Double.random(in: 0.2...1.5, using: &random)
        var moments = (0..<Int.random(in: 1...3, using: &random)).map { _ in Double.random(in: 0.05...delay, using: &random) }
        moments.sort()
        for moment in moments {
            let wait = started.addingTimeInterval(moment).timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            guard process.isRunning else { break }
            let r = Double.random(in: 0..<1, using: &random)
            let ok: Bool
            switch r {
            case ..<0.35:
                let n = Int.random(in: 1...20, using: &random)
                ok = (try? emulator.sendUpstream(count: n)) != nil
                run.chaos.append("upstream \(n)\(ok ? "" : " (refused)")")
            case ..<0.55:
                let id = inputIDs.randomElement(using: &random)!
                ok = (try? emulator.sendReceipt(originalMessageID: id)) != nil
                run.chaos.append("receipt \(id)\(ok ? "" : " (refused)")")
            case ..<0.80:
                ok = (try? emulator.drain()) != nil
                run.chaos.append("drain\(ok ? "" : " (refused)")")
            default:
                ok = (try? emulator.disconnect()) != nil
                run.chaos.append("disconnect\(ok ? "" : " (refused)")")
            }
        }
        let rest = started.addingTimeInterval(delay).timeIntervalSinceNow
        if rest > 0 { usleep(UInt32(rest * 1_000_000)) }
        if !process.isRunning {
            run.exitedEarly = true
            run.status = wait(process, timeout: 1)
            return run
        }
        kill(process.processIdentifier, signal)
        run.status = wait(process, timeout: 20)
        return run
    }
}

/// What the runs left behind, and the checks of the crash test on it.
struct CrashOutcome {
    let seed: UInt64
    let inputIDs: [String]
    let runs: [CrashTest.RunRecord]
    let ids: EmulatorMessageIDs
    let stats: EmulatorStats
    /// The events of every run, read before the run's directory is removed.
    let ledger: Ledger
    /// The store's journal after the last run: seq → the event (without seq and time).
    let journal: [Int64: [String: JSONValue]]
    /// message_ids the store still holds as not final after the last run.
    let liveAfterwards: [String]

    init(seed: UInt64, inputIDs: [String], runs: [CrashTest.RunRecord], ids: EmulatorMessageIDs, stats: EmulatorStats,
         journal: [JournaledEvent], liveAfterwards: [String]) {
        self.seed = seed
        self.inputIDs = inputIDs
        self.runs = runs
        self.ids = ids
        self.stats = stats
        self.liveAfterwards = liveAfterwards
        var bySeq: [Int64: [String: JSONValue]] = [:]
        for event in journal { bySeq[event.seq] = (try? JSONValue.parse(event.line).objectValue) ?? [:] }
        self.journal = bySeq
        ledger = Self.read(runs)
    }

    struct Ledger {
        var accepted: Set<String> = []
        var duplicates: Set<String> = []
        /// message_id → its final events, keyed by `seq` (an event written again after a restart is one event).
        var finals: [String: [String: [String: JSONValue]]] = [:]
        var handedOver: Set<String> = []
        var eventsWithoutSeq = 0
        var seqProblems: [String] = []
        /// Each seq written to an events file, with the event without seq and time.
        var written: [Int64: [String: JSONValue]] = [:]
        var unparsable = 0
        /// Torn last lines of killed runs' events files (allowed; their events must appear again later).
        var tornTails = 0
    }

    static func read(_ runs: [CrashTest.RunRecord]) -> Ledger {
        var ledger = Ledger()
        var seen: [Int64: [String: JSONValue]] = [:]
        var highest: Int64?
        for run in runs {
            let text = (try? String(contentsOfFile: run.eventsPath, encoding: .utf8)) ?? ""
            var previous: Int64?
            let lines = text.split(separator: "\n")
            for (number, line) in lines.enumerated() {
                guard let event = try? JSONValue.parse(String(line)).objectValue else {
                    // A kill can end a write early between two pages: the last line of a killed run's file may
                    // be torn (no line feed after it). Its events are journaled after the file's cursor, so the
                    // next run writes them again: the [resume] checks below find them there.
                    if run.kind == .signalled, number == lines.count - 1, !text.hasSuffix("\n") {
                        ledger.tornTails += 1
                    } else {
                        ledger.unparsable += 1
                    }
                    continue
                }
                let name = event["event"]?.stringValue
                let id = event["message_id"]?.stringValue ?? ""
                let seq = event["seq"]?.intValue
                if let seq, event["time"] != nil {
                    var body = event
                    body["time"] = nil
                    body["seq"] = nil
                    ledger.written[seq] = body
                    if let earlier = seen[seq] {
                        if earlier != body { ledger.seqProblems.append("run \(run.index): seq \(seq) names two events") }
                    } else {
                        seen[seq] = body
                        if let highest, seq <= highest {
                            ledger.seqProblems.append("run \(run.index): new seq \(seq) not above \(highest)")
                        }
                    }
                    if let previous, seq <= previous { ledger.seqProblems.append("run \(run.index): seq \(seq) after \(previous)") }
                    previous = seq
                    highest = max(highest ?? seq, seq)
                } else {
                    ledger.eventsWithoutSeq += 1
                }
                switch name {
                case "accepted": ledger.accepted.insert(id)
                case "rejected":
                    if event["field"]?.stringValue == "message_id", event["error"]?.stringValue?.contains("duplicate") == true {
                        ledger.duplicates.insert(id)
                    }
                case "upstream", "receipt": ledger.handedOver.insert(id)
                default: break
                }
                if isFinal(event) {
                    ledger.finals[id, default: [:]][seq.map { "seq \($0)" } ?? "run \(run.index) line \(number)"] = event
                }
            }
        }
        return ledger
    }

    static func isFinal(_ event: [String: JSONValue]) -> Bool {
        let name = event["event"]?.stringValue
        return name == "acked" || name == "expired" || (name == "nacked" && event["final"] == .bool(true))
    }

    /// Every check of the crash test, as `#expect`s naming the check, the seed and a sample of what failed.
    func expectNothingLost() {
        let context = "seed \(seed); \(runs.map(\.summary))"
        func sample(_ ids: some Collection<String>) -> String {
            let sorted = Set(ids).sorted()
            return sorted.prefix(5).joined(separator: ", ") + (sorted.count > 5 ? ", … (\(sorted.count))" : "")
        }

        // The events files and the store's journal together, one event per seq: what ccsd recorded.
        var finals = ledger.finals
        var accepted = ledger.accepted
        for (seq, event) in journal {
            let id = event["message_id"]?.stringValue ?? ""
            if Self.isFinal(event) { finals[id, default: [:]]["seq \(seq)"] = event }
            if event["event"] == .string("accepted") { accepted.insert(id) }
        }

        // [resume] every message ccsd took has exactly one final event across the runs.
        let taken = accepted.union(ledger.duplicates)
        let lost = taken.filter { (finals[$0]?.count ?? 0) == 0 }
        let twice = taken.filter { (finals[$0]?.count ?? 0) > 1 }
        #expect(lost.count == 0, "[resume] accepted but no final event: \(sample(lost)); \(context)")
        #expect(twice.count == 0, "[resume] more than one final event: \(sample(twice)); \(context)")
        // [resume] every final event belongs to an accepted message.
        let unannounced = finals.keys.filter { !accepted.contains($0) }
        #expect(unannounced.count == 0, "[resume] final event of a message never accepted: \(sample(unannounced)); \(context)")
        // [resume] every input line was taken in some run, and nothing was nacked SHUTDOWN (the store keeps it).
        let never = inputIDs.filter { !accepted.contains($0) }
        #expect(never.count == 0, "[resume] input message never accepted: \(sample(never)); \(context)")
        let shutdown = finals.filter { $0.value.values.contains { $0["error"] == .string("SHUTDOWN") } }.keys
        #expect(shutdown.count == 0, "[resume] nacked SHUTDOWN with a durable store: \(sample(shutdown)); \(context)")
        // [resume] every event carries seq and time; seq increases across the runs.
        #expect(ledger.eventsWithoutSeq == 0, "[resume] \(ledger.eventsWithoutSeq) events without seq/time")
        #expect(ledger.seqProblems.count == 0, "[resume] \(ledger.seqProblems.prefix(3)); \(context)")
        // [resume] the journal (what is left of it: events the events file's cursor passed are pruned): at most
        // one final event per message, nothing left live, every events-file line is the journal's.
        var journalFinals: [String: Int] = [:]
        for event in journal.values where Self.isFinal(event) { journalFinals[event["message_id"]?.stringValue ?? "", default: 0] += 1 }
        let journalTwice = journalFinals.filter { $0.value > 1 }.keys
        #expect(journalTwice.count == 0, "[resume] journal: more than one final event: \(sample(journalTwice)); \(context)")
        #expect(liveAfterwards.count == 0, "[resume] still live after --exit-when-done: \(sample(liveAfterwards)); \(context)")
        let differing = ledger.written.filter { journal[$0.key] != nil && journal[$0.key] != $0.value }.keys
        #expect(differing.count == 0, "[resume] events-file lines that differ from the journal: seq \(differing.sorted().prefix(5))")
        // [resume] a kill -9 between the journal commit and the events-file write must not keep an event from
        // the events file: the next run writes what the journal has after the file's cursor
        // (docs/durable-core.md). A final or `accepted` event in no events file is that gap.
        let finalOnlyInJournal = taken.filter { (ledger.finals[$0]?.count ?? 0) == 0 }
        let acceptedOnlyInJournal = accepted.subtracting(ledger.accepted)
        #expect(finalOnlyInJournal.count + acceptedOnlyInJournal.count == 0,
                "[resume] final event in no events file: \(sample(finalOnlyInJournal)); `accepted` in no events file: \(sample(acceptedOnlyInJournal)); \(context)")
        #expect(ledger.unparsable == 0, "\(ledger.unparsable) events lines are not JSON objects; \(context)")

        // The emulator received every message that ended acked or nacked by CCS, and acked every `acked` one.
        let received = Set(ids.downstreamReceived), emulatorAcked = Set(ids.downstreamAcked)
        let fromServer = finals.filter { entry in
            entry.value.values.contains { $0["event"] == .string("acked") || ($0["event"] == .string("nacked")
                && $0["error"] != .string("SHUTDOWN") && $0["error"] != .string("AUTHENTICATION_FAILED")) }
        }.keys
        let unseen = fromServer.filter { !received.contains($0) }
        #expect(unseen.count == 0, "ended acked/nacked but the emulator never received it: \(sample(unseen)); \(context)")
        let falselyAcked = finals.filter { entry in entry.value.values.contains { $0["event"] == .string("acked") } }
            .keys.filter { !emulatorAcked.contains($0) }
        #expect(falselyAcked.count == 0, "`acked` but the emulator never acked it: \(sample(falselyAcked)); \(context)")

        // Every upstream message the emulator sent was handed over; every ACK the emulator got follows its event.
        // Handed over = journaled (the store's record) or written to an events file.
        var handedOver = ledger.handedOver
        for event in journal.values where event["event"] == .string("upstream") || event["event"] == .string("receipt") {
            handedOver.insert(event["message_id"]?.stringValue ?? "")
        }
        let handedOverOnlyInJournal = handedOver.subtracting(ledger.handedOver)
        #expect(handedOverOnlyInJournal.count == 0,
                "[resume] upstream/receipt in no events file (ACKed on redelivery from the restored dedupe state): \(sample(handedOverOnlyInJournal)); \(context)")
        let notHandedOver = ids.upstreamSent.filter { !handedOver.contains($0) }
        #expect(notHandedOver.count == 0, "upstream sent but never handed over: \(sample(notHandedOver)); \(context)")
        let ackedUnrecorded = ids.clientAcked.filter { !handedOver.contains($0) }
        #expect(ackedUnrecorded.count == 0, "ACKed without its event in any run: \(sample(ackedUnrecorded)); \(context)")

        #expect(stats.flowControlViolations == 0, "flow-control violations: \(stats.flowControlViolations)")
        for run in runs where run.kind != .signalled || run.exitedEarly {
            #expect(run.status == 0 && !(run.kind == .signalled && run.exitedEarly), "\(run.summary); \(context)")
        }
    }
}

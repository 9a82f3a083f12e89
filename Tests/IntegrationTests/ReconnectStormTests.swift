import CCS
import CCSEmulator
import Daemon
import Foundation
import Testing

/// ccsd against a server that ends every stream right after login, in every form, over real TLS on loopback:
/// the attempts the emulator counts stay within what the reconnect backoff allows (before the fix ccsd
/// reconnected at once after every drop of a logged-in connection: hundreds of full logins a second, each
/// resending what was in flight). Small backoffs keep each run to a few seconds; the bound is the backoff's.
@Suite struct ReconnectStormTests {
    /// The reconnect backoff of these runs: 0.1 s doubling to 0.4 s, jitter 0.2.
    static let backoff = Backoff(base: 0.1, cap: 0.4)
    static let runSeconds = 3.0

    /// The most connection attempts one slot can make in `seconds` when every connection fails: the first,
    /// then one per backoff wait at its shortest (`delay · (1 - jitter)`).
    static func maxAttempts(in seconds: Double, backoff: Backoff) -> Int {
        var attempts = 1, elapsed = 0.0, failure = 1
        while true {
            elapsed += backoff.delay(attempt: failure, u: -1)
            if elapsed > seconds { return attempts }
            attempts += 1
            failure += 1
        }
    }

    @Test(arguments: ["stream-error:conflict", "stream-error:system-shutdown", "stream-error:policy-violation",
                      "stream-end", "fin", "rst", "garbage", "see-other-host:other.example:5235"])
    func aServerEndingEveryStreamAfterLoginGetsBackedOffAttempts(form: String) async throws {
        let fault = try #require(AfterLoginFault(parsing: form))
        let started = Date()  // before ccsd starts: its first attempt is inside the measured time
        let run = try DaemonRun(
            exitWhenDone: false,
            emulator: { $0.afterLoginFault = fault },
            daemon: {
                $0.connections = 1
                $0.reconnectBackoff = Self.backoff
                $0.shutdownGraceSeconds = 0.5
            })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(5, prefix: "storm"))
        await waitUntil("the fault ended a stream") { run.emulator.stats().streamsEndedAfterLogin >= 1 }
        try await Task.sleep(for: .seconds(Self.runSeconds))
        let stats = run.emulator.stats()
        let elapsed = Date().timeIntervalSince(started)
        let bound = Self.maxAttempts(in: elapsed, backoff: Self.backoff)
        #expect(stats.connectionsAccepted >= 2, "ccsd did not come back after the first drop")
        #expect(stats.connectionsAccepted <= bound,
                "\(stats.connectionsAccepted) connection attempts in \(elapsed) s; the backoff allows \(bound)")
        // Each message goes out at most once per connection: its resends stay within the same bound.
        #expect(stats.maxAttemptsPerMessageID <= stats.authenticated)
        #expect(stats.maxAttemptsPerMessageID <= bound)
        #expect(stats.downstreamReceived <= stats.authenticated)
        // Nothing was lost meanwhile: every message is still outstanding, none final.
        #expect(run.finalCounts.isEmpty)
    }

    /// `host-unknown` cannot heal by retrying: the slot waits the long refusal backoff (here 3 s doubling, against
    /// a 0.1 s reconnect backoff) and the log names the condition.
    @Test func aRefusalThatCannotHealWaitsTheLongBackoffAndIsLogged() async throws {
        let logPath = NSTemporaryDirectory() + "ccsd-refused-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let refusedBackoff = Backoff(base: 3, cap: 6)
        let started = Date()
        let run = try DaemonRun(
            exitWhenDone: false, logPath: logPath,
            emulator: { $0.afterLoginFault = .streamError(condition: "host-unknown") },
            daemon: {
                $0.connections = 1
                $0.reconnectBackoff = Self.backoff
                $0.refusedReconnectBackoff = refusedBackoff
                $0.shutdownGraceSeconds = 0.5
            })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(2, prefix: "refused"))
        await waitUntil("the fault ended a stream") { run.emulator.stats().streamsEndedAfterLogin >= 1 }
        try await Task.sleep(for: .seconds(2))
        let attempts = run.emulator.stats().connectionsAccepted
        let elapsed = Date().timeIntervalSince(started)
        // One attempt until at least 2.4 s; the plain reconnect backoff would have allowed about 7 by now.
        #expect(attempts <= Self.maxAttempts(in: elapsed, backoff: refusedBackoff),
                "\(attempts) attempts in \(elapsed) s after host-unknown")
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let line = log.split(separator: "\n").first { $0.contains("level=error") && $0.contains("condition=host-unknown") }
        #expect(line != nil, "no error line naming host-unknown in:\n\(log)")
        await waitUntil("the slot tried again after the refusal backoff", timeout: 8) {
            run.emulator.stats().connectionsAccepted >= 2
        }
    }
}

/// Errors about ccsd's own ACKs, with message_ids that collide in both directions: the emulator answers
/// every ACK with a stanza error echoing it and/or a `BAD_ACK` nack, for upstream ids `m-1…` while downstream
/// `m-0…` are in flight. Before the fix those errors ended the downstream messages of the same id as
/// `nacked` final and their real acks came back unmatched.
@Suite struct AckErrorTests {
    @Test(arguments: [AckRejection.stanzaError, .badAck, .both])
    func errorsAboutAcksNeverResolveTheDownstreamOfTheSameID(rejection: AckRejection) async throws {
        let run = try DaemonRun(
            emulator: {
                $0.ackRejection = rejection
                $0.upstreamMessageIDPrefix = "m-"
                $0.ackLatencyMilliseconds = 4000
            },
            daemon: { $0.connections = 1 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(6, prefix: "m"))  // m-0 … m-5
        // Received (a count that only grows, so a loaded machine cannot miss it); their acks come 4 s later.
        await waitUntil("downstream in flight") { run.emulator.stats().downstreamReceived >= 6 }
        let sent = try run.emulator.sendUpstream(count: 5)  // m-1 … m-5, on the same connection
        #expect(sent.messageIDs == ["m-1", "m-2", "m-3", "m-4", "m-5"])
        await waitUntil("every ACK rejected") { run.emulator.stats().acksRejected >= 5 }
        run.endInput()
        await waitUntil("ccsd done", timeout: 20) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.events("nacked").isEmpty, "errors about ACKs ended downstream messages: \(run.events("nacked"))")
        #expect(Set(run.events("acked").compactMap { $0["message_id"]?.stringValue }) == Set((0..<6).map { "m-\($0)" }))
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
        #expect(Set(run.events("upstream").compactMap { $0["message_id"]?.stringValue }) == Set(sent.messageIDs))
        #expect(run.emulator.stats().duplicateMessageIDs == 0)
    }
}

/// The fault modes' configuration forms and `ccs-emulator` flags.
@Suite struct FaultModeFlagTests {
    @Test(arguments: ["stream-error:host-unknown", "stream-end", "fin", "rst", "garbage", "see-other-host:h.example:5235"])
    func afterLoginFormsRoundTrip(form: String) {
        #expect(AfterLoginFault(parsing: form)?.description == form)
    }

    @Test func malformedFormsAreRefused() {
        for text in ["", "stream-error:", "stream-error:Bad<", "see-other-host:", "close", "RST"] {
            #expect(AfterLoginFault(parsing: text) == nil, "accepted \(text)")
        }
        #expect(AfterLoginFault(parsing: "see-other-host") == .seeOtherHost("other-host.invalid:5235"))
    }

    @Test func emulatorFlagsAreDocumentedAndChecked() throws {
        let cli = CommandLineTests()
        let help = try cli.run("ccs-emulator", ["--help"])
        #expect(help.status == 0)
        for flag in ["--end-after-login FORM", "--end-after-login-delay-ms", "--reject-acks MODE", "--upstream-id-prefix"] {
            #expect(help.stdout.contains(flag), "--help does not document \(flag)")
        }
        let badForm = try cli.run("ccs-emulator", ["--sender-id", "1", "--end-after-login", "slam"])
        #expect(badForm.status == 2)
        #expect(badForm.stderr.contains("--end-after-login: expected"))
        let badMode = try cli.run("ccs-emulator", ["--sender-id", "1", "--reject-acks=sometimes"])
        #expect(badMode.status == 2)
        #expect(badMode.stderr.contains("--reject-acks: expected stanza-error, bad-ack or both"))
    }
}

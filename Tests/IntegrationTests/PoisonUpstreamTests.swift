import CCS
import CCSEmulator
import Daemon
import Foundation
import TLS
import Testing
import XMPP

/// No poison messages (issue 7 item 4), over real TLS against the emulator's poison-upstream fault mode:
/// upstream messages and a receipt ccsd cannot fully decode are handed over once and ACKed, so the server
/// stops redelivering them; what cannot be recovered is logged once, not at every redelivery.
@Suite(.serialized) struct PoisonUpstreamTests {
    @Test func undecodableUpstreamAndReceiptsAreHandedOverOnceAndAcked() async throws {
        let run = try LoggedDaemonRun()
        defer { run.stop() }
        let ids = CCSEmulator.poisonUpstreamPayloads.map(\.messageID)
        await waitUntil("every recoverable poison message ACKed", timeout: 20) { run.emulator.stats().upstreamAcked == ids.count }

        // Handed over once each, with U+FFFD for lone surrogates and decode_error where decoding failed.
        let upstream = Dictionary(grouping: run.events("upstream"), by: { $0["message_id"]?.stringValue ?? "" })
        let receipts = run.events("receipt").filter { $0["message_id"] == .string("dr2:poison-receipt") }
        for id in ids where id.hasPrefix("poison-") && !id.hasPrefix("poison-id-") { #expect(upstream[id]?.count == 1, "\(id)") }
        #expect(receipts.count == 1)
        #expect(upstream["poison-high"]?.first?["data"]?["text"] == .string("lone high \u{FFFD} here"))
        #expect(upstream["poison-low"]?.first?["data"]?["text"] == .string("lone low \u{FFFD}, reversed \u{FFFD}\u{FFFD}, pair 😀"))
        #expect(upstream["poison-high"]?.first?["decode_error"] == nil)
        #expect(receipts.first?["device_registration_id"] == .string("tok\u{FFFD}"))
        let number = try #require(upstream["poison-number"]?.first)
        #expect(number["data"] == .object(["n": .null, "text": .string("big")]))
        #expect(number["decode_error"]?.stringValue?.contains("data.n") == true)
        let broken = try #require(upstream["poison-broken"]?.first)
        #expect(broken["from"] == .string("device-poison-4"))
        #expect(broken["data"] == .null)
        #expect(broken["decode_error"]?.stringValue?.contains("not valid JSON") == true)
        #expect(broken["raw"]?.stringValue == CCSEmulator.poisonUpstreamPayloads.first { $0.messageID == "poison-broken" }?.json)
        // Each recoverable one ACKed once (the receipt to its from, like any receipt); the rest cannot be.
        #expect(run.emulator.clientAcks().map(\.messageID).sorted() == ids.sorted())
        #expect(upstream["poison-nofrom"] == nil)

        // Reconnects redeliver only what could not be ACKed, and it is not logged again.
        // Reconnects redeliver only what could not be ACKed, and it is not logged again. Two connections, so
        // the emulator redelivers on the other, ready one (ccs-protocol.md §3).
        let unrecoverable = CCSEmulator.poisonUpstreamUnrecoverable.count
        func holder() -> Int? { run.emulator.connectionInfos().first { $0.pendingUpstream > 0 }?.id }
        for round in 1...2 {
            await waitUntil("two connections ready before round \(round)", timeout: 20) {
                run.emulator.connectionInfos().filter { $0.phase == "ready" }.count == 2
            }
            let id = try #require(holder())
            // The other connection has answered a ping, so ccsd's login on it is complete (its session request
            // came before the pong) and the redelivery is not an early stanza there.
            let other = try #require(run.emulator.connectionInfos().first { $0.id != id && $0.phase == "ready" }).id
            let pongs = run.emulator.stats().pongsReceived
            _ = try run.emulator.ping(connection: other)
            await waitUntil("pong on connection \(other)", timeout: 20) { run.emulator.stats().pongsReceived > pongs }
            _ = try run.emulator.disconnect(connection: id)
            await waitUntil("redelivered after disconnect \(round)", timeout: 20) {
                run.emulator.stats().upstreamRedelivered == round * unrecoverable
            }
        }
        let after = run.emulator.stats()
        #expect(after.upstreamAcked == ids.count, "no recoverable poison was redelivered and ACKed again")
        #expect(run.events("upstream").count == ids.count - 1)
        // Let the last redelivery be read: a pong after it on the same connection means ccsd processed it.
        let pongs = after.pongsReceived
        guard let last = holder() else {
            Issue.record("the unrecoverable messages are pending on no connection")
            return
        }
        _ = try run.emulator.ping(connection: last)
        await waitUntil("ccsd read the redelivery", timeout: 20) { run.emulator.stats().pongsReceived > pongs }
        let warnings = run.log.split(separator: "\n").filter { $0.contains("unreadable CCS message ignored") }
        #expect(warnings.count == unrecoverable, "each unrecoverable message is logged once, not at each of its 3 deliveries:\n\(warnings.joined(separator: "\n"))")
        #expect(warnings.contains { $0.contains("poison-nofrom") })
    }

    /// Four upstream messages whose message_ids read alike once lone surrogates become U+FFFD
    /// (`poison-id-\ud800`, `\ud801`, `\udfff`, and `\ufffd` itself): each is a distinct message, handed
    /// over once, and ACKed with its message_id exactly as the server wrote it (the emulator matches ACKs
    /// by the literal it sent, as a server does).
    @Test func messageIDsThatDifferOnlyInLoneSurrogatesStayDistinct() async throws {
        let run = try LoggedDaemonRun()
        defer { run.stop() }
        let ids = CCSEmulator.poisonUpstreamPayloads.map(\.messageID).filter { $0.contains("poison-id-") }
        #expect(ids.count == 4)
        await waitUntil("each poison-id message ACKed", timeout: 20) {
            Set(run.emulator.clientAcks().map(\.messageID)).isSuperset(of: ids)
        }
        #expect(run.emulator.clientAcks().map(\.messageID).filter { ids.contains($0) }.sorted() == ids.sorted())
        let events = run.events("upstream").filter { $0["message_id"] == .string("poison-id-\u{FFFD}") }
        #expect(events.compactMap { $0["data"]?["which"]?.stringValue }.sorted() == ["d800", "d801", "dfff", "fffd"])
        // The app can tell them apart: those that held lone surrogates say so, naming the literal.
        for event in events where event["data"]?["which"] != .string("fffd") {
            let which = event["data"]?["which"]?.stringValue ?? ""
            #expect(event["decode_error"]?.stringValue?.contains(#""poison-id-\u\#(which)""#) == true, "\(event)")
        }
        #expect(events.first { $0["data"]?["which"] == .string("fffd") }?["decode_error"] == nil)
    }

    /// A `message_type` that is not a string (null, a number, a boolean, an array, an object; also followed
    /// by garbage) cannot be an ack or nack ccsd can trust: the message is handed over once as an upstream
    /// message naming the field, and ACKed.
    @Test func nonStringMessageTypeIsHandedOverOnceAndAcked() async throws {
        let run = try LoggedDaemonRun()
        defer { run.stop() }
        let ids = CCSEmulator.poisonUpstreamPayloads.map(\.messageID).filter { $0.hasPrefix("poison-type-") }
        #expect(ids.count == 6)
        await waitUntil("each poison-type message ACKed", timeout: 20) {
            Set(run.emulator.clientAcks().map(\.messageID)).isSuperset(of: ids)
        }
        let events = Dictionary(grouping: run.events("upstream"), by: { $0["message_id"]?.stringValue ?? "" })
        let got = ["null": "null", "number": "5", "bool": "true", "array": "an array", "object": "an object", "garbage": "null"]
        for (name, written) in got {
            let event = events["poison-type-\(name)"]
            #expect(event?.count == 1, "\(name)")
            #expect(event?.first?["from"] == .string("device-poison-6"))
            let error = event?.first?["decode_error"]?.stringValue ?? ""
            #expect(error.contains("message_type: must be a string (got \(written))"), "\(name): \(error)")
        }
        #expect(events["poison-type-null"]?.first?["data"] == .object(["k": .string("v")]))
        #expect(!run.log.contains("message_type: must"), "no message is unreadable for its message_type:\n\(run.log)")
    }
}

/// ccsd (the real `CCSDaemon` and events outlet, no intake) against the emulator in its poison-upstream fault
/// mode, logging at warning level to a file the test reads.
final class LoggedDaemonRun: Sendable {
    let emulator: CCSEmulator
    let directory: String
    let eventsPath: String
    let logPath: String
    let loop = EventLoop(label: "poison.ccsd")
    let daemon: CCSDaemon

    init() throws {
        directory = NSTemporaryDirectory() + "ccsd-poison-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = "poison-key-\(UUID().uuidString)"
        var emulatorConfiguration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: DaemonRun.senderID, serverKey: key, caDirectory: directory)
        emulatorConfiguration.poisonUpstream = true
        emulator = CCSEmulator(configuration: emulatorConfiguration)
        let ports = try emulator.start()

        var configuration = Configuration()
        configuration.senderID = DaemonRun.senderID
        configuration.serverKey = Secret(key)
        configuration.connections = 2
        configuration.primaryEndpoint = Endpoint(host: "localhost", port: ports[0])
        configuration.secondaryEndpoint = nil
        configuration.caFile = directory + "/ca.pem"
        configuration.reconnectBackoff = Backoff(base: 0.05, cap: 0.2)

        eventsPath = directory + "/events.jsonl"
        logPath = directory + "/ccsd.log"
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        configuration.stateDirectory = directory + "/state"
        daemon = CCSDaemon(configuration: configuration, store: try configuration.openStore(), outlet: try EventOutlet(path: eventsPath),
                           logger: Logger(minimum: .warning, fileDescriptor: logFD), loop: loop,
                           exitWhenDone: false) { _ in }
        let daemon = daemon
        loop.execute { daemon.start() }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func events(_ name: String) -> [[String: JSONValue]] {
        guard let text = try? String(contentsOfFile: eventsPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)).objectValue }
            .filter { $0["event"] == .string(name) }
    }

    func stop() {
        let daemon = daemon
        loop.execute { daemon.signal(.terminate) }
        emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Intake of lines Foundation refuses or bends (issue 7 items 4 and 7), through the real reader.
@Suite(.serialized) struct IntakeRefusedTextTests {
    @Test func linesAreAcceptedWithReplacementCharactersOrRejectedNamingTheField() async throws {
        let run = try DaemonRun()
        defer { run.stop(); run.cleanUp() }
        run.send([
            #"{"to":"tok-1","message_id":"lone-1","data":{"text":"a\ud83d b"}}"#,
            #"{"to":"tok-1","message_id":"big-ttl","time_to_live":1e400,"data":{"a":"b"}}"#,
            #"{"to":"tok-1","message_id":"wrapped-ttl","time_to_live":9223372036854775808,"data":{"a":"b"}}"#,
            #"{"to":"topics/news","message_id":"no-prefix","data":{"a":"b"}}"#,
            #"{"to":"tok-1","message_id":"cut","data":{"a":"b""#,
        ])
        run.endInput()
        await waitUntil("ccsd done", timeout: 30) { run.exited != nil }
        #expect(run.events("acked").compactMap { $0["message_id"]?.stringValue } == ["lone-1"])
        let rejected = Dictionary(uniqueKeysWithValues: run.events("rejected").compactMap { event in
            event["message_id"]?.stringValue.map { ($0, event) }
        })
        #expect(rejected["big-ttl"]?["field"] == .string("time_to_live"))
        #expect(rejected["big-ttl"]?["error"]?.stringValue?.hasSuffix("(got 1e400)") == true)
        #expect(rejected["wrapped-ttl"]?["error"]?.stringValue?.hasSuffix("(got 9223372036854775808)") == true)
        #expect(rejected["no-prefix"]?["field"] == .string("to"))
        #expect(rejected["cut"]?["field"] == .string(""))
        #expect(rejected["cut"]?["error"]?.stringValue?.contains("not valid JSON") == true)
    }
}

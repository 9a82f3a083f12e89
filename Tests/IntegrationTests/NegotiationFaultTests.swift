import CCS
@testable import CCSEmulator
import Daemon
import Foundation
import Synchronization
import Testing
import TLS
import XMLStream

/// ccsd against the emulator's login fault modes (`NegotiationFaults`), over real TLS on loopback
/// (issue 7 items 2 and 6). Each failed before its fix: ccsd never logged in.
@Suite(.serialized) struct NegotiationFaultTests {
    /// A server with upstream messages and a receipt to redeliver sends them (with an ack nobody asked for,
    /// presence, an iq get, a ping and a stray iq result) right after the bind result, before it answers
    /// the session request. Before the fix every login failed on the first of them, so ccsd never logged
    /// in and the server redelivered forever. Two connections: both get the traffic before either ACKs.
    @Test func earlyTrafficBeforeTheSessionResultIsHandedOverOnceAndAcked() async throws {
        let early = 3
        let run = try DaemonRun(exitWhenDone: false, emulator: { $0.negotiationFaults.earlyUpstream = early },
                                daemon: { $0.connections = 2 })
        defer { run.stop(); run.cleanUp() }
        let earlyIDs = (1...early).map { "early-u-\($0)" }
        await waitUntil("both connections logged in", timeout: 20) {
            run.events("connection").filter { $0["state"] == .string("connected") }.count == 2
        }
        run.send(DaemonRun.messages(20, prefix: "nf"))
        await waitUntil("every downstream message acked", timeout: 20) { run.finalCounts.count == 20 }
        await waitUntil("every early item ACKed") { run.emulator.connectionInfos().allSatisfy { $0.pendingUpstream == 0 } }
        #expect(run.finalCounts.values.allSatisfy { $0 == 1 })
        #expect(run.events("acked").count == 20)

        // Each early upstream message and the receipt handed over exactly once, though sent on both connections.
        let upstream = run.events("upstream").compactMap { $0["message_id"]?.stringValue }
        #expect(upstream.sorted() == earlyIDs)
        let receipts = run.events("receipt").compactMap { $0["message_id"]?.stringValue }
        #expect(receipts.filter { $0 == "dr2:early-m-1" }.count == 1)
        // ... and ACKed on every connection it came on (an ACK counts only there, ccs-protocol.md §3).
        let acks = run.emulator.clientAcks()
        for id in earlyIDs + ["dr2:early-m-1"] {
            #expect(acks.contains { $0.messageID == id }, "\(id) was never ACKed")
        }
        let stats = run.emulator.stats()
        #expect(stats.upstreamAcked >= early)
        #expect(stats.pongsReceived >= 1, "the early ping went unanswered")
        #expect(stats.xmlErrors == 0)
        // Logged in the first time on each connection: no failed login, no reconnect.
        #expect(stats.connectionsAccepted == 2)
        #expect(stats.authenticated == 2)
        #expect(run.events("connection").filter { $0["state"] == .string("connected") }.count == 2)
    }

    /// After `<success/>` the server writes a newline, and before each stream header a byte-order mark and/or
    /// an XML declaration. Before the fix the declaration after the newline failed every login.
    @Test(arguments: ["newline,declaration", "newline,bom", "newline,bom,declaration", "bom,declaration"])
    func restartNoiseBetweenStreamsStillLogsIn(prologue: String) async throws {
        let parts = try #require(NegotiationFaults.parsePrologue(prologue))
        let run = try DaemonRun(emulator: { $0.negotiationFaults.streamPrologue = parts },
                                daemon: { $0.connections = 1 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(5, prefix: "rn"))
        run.endInput()
        await waitUntil("every message acked", timeout: 20) { run.finalCounts.count == 5 }
        await waitUntil("ccsd done", timeout: 15) { run.exited != nil }
        #expect(run.exited == 0)
        #expect(run.events("acked").count == 5)
        let stats = run.emulator.stats()
        #expect(stats.connectionsAccepted == 1, "ccsd needed \(stats.connectionsAccepted) connections to log in")
        #expect(stats.xmlErrors == 0)
    }

    /// The emulator's side of item 6: a client that writes a byte-order mark and an XML declaration before
    /// each stream header, and a newline before its restarted header, logs in; the whole login in one write
    /// (so the restart lands inside one read) and in one write per step.
    @Test(arguments: [false, true])
    func emulatorAcceptsWhitespaceMarksAndDeclarationsFromClients(oneWrite: Bool) async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let header = "\u{FEFF}<?xml version='1.0'?>\n<stream:stream to='gcm.googleapis.com' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
        let plain = Data("\u{0}\(EmulatorHarness.senderID)@gcm.googleapis.com\u{0}\(EmulatorHarness.serverKey)".utf8).base64EncodedString()
        let steps = [
            "\n" + header,
            "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>\(plain)</auth>",
            "\n \r\n" + header,
            "<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>raw</resource></bind></iq>",
        ]
        let client = ScriptedTLSClient(writes: oneWrite ? [steps.joined()] : steps)
        let loop = harness.clientLoop
        let configuration = TLSClientConfiguration(caFile: harness.caFile)
        let port = harness.port
        let connection = loop.submitAndWait {
            LoopBound(TLSConnection.connect(host: "localhost", port: port, configuration: configuration, on: loop, delegate: client),
                      eventLoop: loop)
        }
        defer { loop.submitAndWait { connection.value.abort() } }
        await waitUntil("the raw client is bound") {
            harness.emulator.connectionInfos().contains { $0.jid == "\(EmulatorHarness.senderID)@gcm.googleapis.com/raw" }
        }
        #expect(harness.emulator.stats().xmlErrors == 0)
        #expect(harness.emulator.stats().authenticated == 1)
    }
}

/// A TLS client that writes fixed text once the handshake is done: the first piece at once, each
/// following one after the server's next bytes (or all at once when given one piece).
final class ScriptedTLSClient: TLSConnectionDelegate, @unchecked Sendable {
    // @unchecked Sendable: touched only on the client loop.
    private var writes: [String]

    init(writes: [String]) { self.writes = writes }

    func tlsConnectionDidBecomeReady(_ connection: TLSConnection) { writeNext(connection) }

    func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        // The next step goes once the server answered the previous one (features, success).
        if text.contains("features>") || text.contains("<success") { writeNext(connection) }
    }

    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) {}

    private func writeNext(_ connection: TLSConnection) {
        guard !writes.isEmpty else { return }
        try? connection.write(writes.removeFirst())
    }
}

/// The fault-mode settings themselves, without sockets.
@Suite struct NegotiationFaultSettingsTests {
    @Test func prologueListParsesKnownNamesOnly() {
        #expect(NegotiationFaults.parsePrologue("newline,bom,declaration") == Set(NegotiationFaults.ProloguePart.allCases))
        #expect(NegotiationFaults.parsePrologue(" bom ") == [.byteOrderMark])
        #expect(NegotiationFaults.parsePrologue("") == [])
        #expect(NegotiationFaults.parsePrologue("bom,xml") == nil)
    }

    @Test func serverNegotiationWritesThePrologueAroundHeadersAndAfterSuccess() {
        let faults = NegotiationFaults(streamPrologue: [.newlineAfterSuccess, .byteOrderMark, .xmlDeclaration])
        var machine = ServerNegotiation(senderID: "1", serverKey: "k", connectionTag: "t")
        machine.streamHeaderPrefix = faults.headerPrefix
        machine.afterSuccess = faults.afterSuccess
        let header = XMLElement(name: "stream", namespace: XMLNamespace.stream)
        guard case .send(let first)? = machine.streamStarted(header).first else { Issue.record("no header"); return }
        #expect(first.hasPrefix("\u{FEFF}<?xml version='1.0' encoding='UTF-8'?>\n<stream:stream "))
        let auth = XMLElement(name: "auth", namespace: XMLNamespace.sasl, attributes: [.init(name: "mechanism", value: "PLAIN")],
                              text: Data("\u{0}1@gcm.googleapis.com\u{0}k".utf8).base64EncodedString())
        guard case .send(let success)? = machine.stanzaReceived(auth).first else { Issue.record("no success"); return }
        #expect(success == ServerStanzas.saslSuccess + "\n")
        guard case .send(let second)? = machine.streamStarted(header).first else { Issue.record("no second header"); return }
        #expect(second.hasPrefix("\u{FEFF}<?xml"))
    }

    @Test func emulatorFlagsAreValidated() throws {
        let cli = CommandLineTests()
        let bad = try cli.run("ccs-emulator", ["--sender-id", "1", "--stream-prologue", "bom,xml"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--stream-prologue"))
        let badCount = try cli.run("ccs-emulator", ["--sender-id", "1", "--early-upstream", "-1"])
        #expect(badCount.status == 2)
        #expect(badCount.stderr.contains("--early-upstream"))
        let help = try cli.run("ccs-emulator", ["--help"])
        #expect(help.stdout.contains("--early-upstream N") && help.stdout.contains("--stream-prologue LIST"))
    }
}

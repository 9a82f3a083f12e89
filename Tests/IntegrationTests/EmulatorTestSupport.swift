import CCS
import CCSEmulator
import Foundation
import Synchronization
import Testing
import TLS
import XMLStream
import XMPP

/// Polls `condition` every 10 ms for at most `timeout` seconds; records an issue naming `what` if it never holds.
@discardableResult
func waitUntil(_ what: String, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    if condition() { return true }
    Issue.record("timed out after \(timeout) s waiting for \(what)", sourceLocation: sourceLocation)
    return false
}

/// Records what an `XMPPClient` reports; readable from the test thread.
final class ClientProbe: XMPPClientDelegate, Sendable {
    struct State: Sendable {
        var jid: String?
        var stanzas: [XMLElement] = []
        var end: XMPPError?
    }
    let state = Locked(State())

    var jid: String? { state.withLock { $0.jid } }
    var end: XMPPError? { state.withLock { $0.end } }
    var stanzas: [XMLElement] { state.withLock { $0.stanzas } }
    /// The received stanzas that parse as CCS messages.
    var messages: [InboundMessage] { stanzas.compactMap { try? InboundMessage.parse(stanza: $0) } }
    /// The acks among `messages`.
    var acks: [InboundMessage.Ack] { messages.compactMap { if case .ack(let ack) = $0 { ack } else { nil } } }

    func xmppClientDidBecomeReady(_ client: XMPPClient, jid: String) { state.withLock { $0.jid = jid } }
    func xmppClient(_ client: XMPPClient, didReceive stanza: XMLElement) { state.withLock { $0.stanzas.append(stanza) } }
    func xmppClient(_ client: XMPPClient, didEndWith error: XMPPError) { state.withLock { $0.end = error } }
}

/// An emulator on an ephemeral loopback port with a generated CA written to a temp file, and real
/// `XMPPClient`s on their own loop.
final class EmulatorHarness: Sendable {
    static let senderID = "123456789"
    static let serverKey = "test-server-key"

    let emulator: CCSEmulator
    let directory: String
    let caFile: String
    let clientLoop = EventLoop(label: "test.client")

    init(_ adjust: (inout EmulatorConfiguration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "ccs-emulator-test-\(UUID().uuidString)"
        var configuration = EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: Self.senderID, serverKey: Self.serverKey,
            caDirectory: directory)
        adjust(&configuration)
        emulator = CCSEmulator(configuration: configuration)
        try emulator.start()
        caFile = directory + "/ca.pem"
    }

    var port: Int { emulator.ports[0] }

    /// Starts a client logging in with `key`; returns it (usable on `clientLoop`) and its probe.
    func connect(key: String = EmulatorHarness.serverKey, jidDomain: String = "gcm.googleapis.com")
        -> (client: LoopBound<XMPPClient>, probe: ClientProbe) {
        let probe = ClientProbe()
        let configuration = XMPPClientConfiguration(
            host: "localhost", port: port,
            credentials: XMPPCredentials(username: Self.senderID, password: Secret(key), jidDomain: jidDomain),
            tls: TLSClientConfiguration(caFile: caFile))
        let loop = clientLoop
        let client = loop.submitAndWait { () -> LoopBound<XMPPClient> in
            let client = XMPPClient(configuration: configuration, on: loop, delegate: probe)
            client.start()
            return LoopBound(client, eventLoop: loop)
        }
        return (client, probe)
    }

    /// Connects and waits for login.
    func connectReady() async -> (client: LoopBound<XMPPClient>, probe: ClientProbe) {
        let pair = connect()
        await waitUntil("login") { pair.probe.jid != nil || pair.probe.end != nil }
        return pair
    }

    func send(_ client: LoopBound<XMPPClient>, _ raw: String) {
        clientLoop.submitAndWait { _ = client.value.send(raw: raw) }
    }

    func close(_ client: LoopBound<XMPPClient>) {
        clientLoop.submitAndWait { client.value.abort() }
    }

    func shutdown() {
        emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

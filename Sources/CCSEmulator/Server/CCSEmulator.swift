import CCS
import Dispatch
import Foundation
import Synchronization
import Certificates
import TLS
import XMLStream

/// An in-process CCS (FCM XMPP connection server) for tests, the benchmark and the demo.
///
/// Speaks server-side XMPP over direct TLS as ccs-protocol.md §1 describes, answers downstream messages
/// with acks, nacks and stanza errors per `EmulatorConfiguration` (§3–4), sends upstream messages,
/// receipts and CONNECTION_DRAINING on command (§3, §5), and counts what clients do in `EmulatorStats`.
///
/// All state lives on `loop`. Every public method may be called from any thread (it hops onto the loop and
/// waits) or from the loop itself (it runs inline).
public final class CCSEmulator: @unchecked Sendable {
    // @unchecked Sendable: every mutable stored property below is touched only on `loop`, except
    // `published`, which is `Locked`.

    /// One ACK from the client of an upstream message or receipt: which message_id on which connection.
    public struct ClientAck: Sendable, Equatable {
        public var connection: Int
        public var messageID: String
        public init(connection: Int, messageID: String) {
            self.connection = connection
            self.messageID = messageID
        }
    }

    /// A snapshot of one live connection.
    public struct ConnectionInfo: Sendable, Equatable {
        /// The emulator's connection id (1, 2, … in accept order), used by the commands.
        public var id: Int
        /// The client's address, "127.0.0.1:54321".
        public var remote: String
        /// "negotiating", "ready", "draining", "closing", or "half-open" (the `half-open` fault).
        public var phase: String
        /// The bound full JID, once bound.
        public var jid: String?
        /// Downstream messages not yet acked/nacked by the emulator.
        public var unacked: Int
        /// Upstream messages and receipts not yet ACKed by the client.
        public var pendingUpstream: Int
    }

    public let configuration: EmulatorConfiguration
    /// The loop every connection of this emulator runs on.
    public let loop: EventLoop
    private let logSink: @Sendable (String) -> Void

    private struct Published: Sendable {
        var ports: [Int] = []
        var caCertificatePEM: String?
    }
    private let published = Locked(Published())

    // Loop-confined state.
    private var started = false
    private var stopped = false
    private var servers: [TLSServer] = []
    var connections: [Int: EmulatorConnection] = [:]
    private var nextConnectionID = 1
    var counters = EmulatorStats()
    /// Acks written per closed connection, by connection id (Stats/AckedPerConnection.swift).
    var ackedOnClosedConnections: [Int: Int] = [:]
    /// Fault mode poison upstream (Faults/PoisonUpstream.swift): sent already.
    var poisonUpstreamSent = false
    /// Connection faults armed for the next connections, in order (Faults/ConnectionFault.swift).
    var armedFaults: [(fault: ConnectionFault, remaining: Int)] = []
    /// The `cut-stanza` fault's message_id counter.
    var cutSequence = 0
    private var policy: DownstreamPolicy
    /// Per downstream message_id: attempts decided (drain nacks excluded), the target, and whether acked.
    var seen = SeenMessages()
    private var upstreamSequence = 0
    private var pingSequence = 0
    /// Upstream messages to redeliver once a connection is ready (none was when theirs closed).
    private var orphanUpstream: [(messageID: String, json: String)] = []
    private var acksLog: [ClientAck] = []
    /// Upstream message_ids and receipt message_ids sent, first sends only (Stats/MessageIDLog.swift).
    var sentLog = SentMessageIDs()
    private var replies: [ScheduledReply] = []
    private var repliesHead = 0
    private var replyTimer: TimerHandle?

    struct Seen {
        var attempts: Int
        var target: String?
        /// The latest ack, nil while not acked (or its ack was lost to a fault).
        var ack: AckMark?
        var acked: Bool { ack != nil }
    }

    private struct ScheduledReply {
        var due: UInt64
        var connection: EmulatorConnection
        var messageID: String
        /// nil: a plain ack (`DownstreamPolicy.isPlainAck`), written by `ServerStanzas.appendPlainAck`.
        var outcome: DownstreamPolicy.Outcome?
        var target: String?
        var receiptRequested: Bool
    }

    /// The data object of every upstream message the `upstream` command sends, before `"n"` is added:
    /// XML-special characters, quotes and an emoji, so clients prove they unescape byte-exact.
    public static let upstreamText = "<b>Tom & \"Jerry\"</b> ' 😀 ]]>"

    /// - Parameters:
    ///   - loop: the loop to run on; by default a new one of its own.
    ///   - log: receives one line per notable event (no server key, tokens as given); default: discarded.
    public init(configuration: EmulatorConfiguration, loop: EventLoop = EventLoop(label: "ccs-emulator"),
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.configuration = configuration
        self.loop = loop
        self.logSink = log
        self.policy = DownstreamPolicy(rules: configuration.nackRules, nackRate: configuration.nackRate,
                                       seed: configuration.seed)
    }

    // MARK: Lifecycle

    /// Makes the certificate (for `.generated`, writing `ca.pem` into `caDirectory` if set) and listens on
    /// every `configuration.listen` address.
    /// - Returns: the bound ports, in `listen` order (ephemeral ones resolved); also `ports` from now on.
    /// - Throws: `EmulatorError` `.startFailed` (port in use, bad PEM, unwritable directory) or `.wrongState`.
    @discardableResult
    public func start() throws(EmulatorError) -> [Int] {
        let chain: String, key: String
        var caPEM: String?
        switch configuration.certificate {
        case .provided(let certificateChainPEM, let privateKeyPEM):
            chain = certificateChainPEM
            key = privateKeyPEM
        case .generated:
            do {
                let ca = try CertificateAuthority.generate(commonName: "ccs-emulator throwaway CA")
                let leaf = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
                chain = leaf.certificatePEM
                key = leaf.privateKeyPEM
                caPEM = ca.certificatePEM
            } catch {
                throw EmulatorError(.startFailed, "cannot generate certificates: \(error)")
            }
            if let directory = configuration.caDirectory {
                let path = (directory as NSString).appendingPathComponent("ca.pem")
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    try Data(caPEM!.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                } catch {
                    throw EmulatorError(.startFailed, "cannot write \(path): \(error.localizedDescription)")
                }
            }
        }
        let tlsConfiguration = TLSServerConfiguration(certificateChainPEM: chain, privateKeyPEM: key,
                                                      maxBufferedWriteBytes: configuration.maxBufferedWriteBytes)
        let result: Result<[Int], EmulatorError> = onLoop {
            guard !started else { return .failure(EmulatorError(.wrongState, "start() called twice")) }
            var made: [TLSServer] = []
            for address in configuration.listen {
                do {
                    let server = try TLSServer(host: address.host, port: address.port, configuration: tlsConfiguration,
                                               on: loop) { [weak self] connection in self?.accepted(connection) }
                    made.append(server)
                } catch {
                    made.forEach { $0.close() }
                    return .failure(EmulatorError(.startFailed, "cannot listen on \(address): \(error)"))
                }
            }
            started = true
            servers = made
            let ports = made.map(\.port)
            log("listening on \(zip(configuration.listen, ports).map { "\($0.host):\($1)" }.joined(separator: ", "))")
            return .success(ports)
        }
        let ports = try result.get()
        published.withLock {
            $0.ports = ports
            $0.caCertificatePEM = caPEM
        }
        return ports
    }

    /// The bound ports in `configuration.listen` order; empty before `start()`.
    public var ports: [Int] { published.withLock { $0.ports } }

    /// The generated CA certificate (PEM) clients must trust; nil before `start()` or with `.provided`.
    public var caCertificatePEM: String? { published.withLock { $0.caCertificatePEM } }

    /// Stops listening and ends every stream (`</stream:stream>` and a clean TLS close). Pending replies
    /// are dropped. Idempotent.
    public func stop() {
        onLoop {
            guard !stopped else { return }
            stopped = true
            servers.forEach { $0.close() }
            servers = []
            replyTimer?.cancel()
            replies = []
            repliesHead = 0
            for connection in connections.values { connection.closeStream(condition: nil) }
            log("stopped")
        }
    }

    // MARK: Queries

    /// A snapshot of the counters.
    public func stats() -> EmulatorStats {
        onLoop {
            var snapshot = counters
            snapshot.liveConnections = connections.count
            return snapshot
        }
    }

    /// The live connections, oldest first.
    public func connectionInfos() -> [ConnectionInfo] {
        onLoop {
            connections.keys.sorted().map { id in
                let c = connections[id]!
                return ConnectionInfo(id: id, remote: c.tls.remoteDescription, phase: c.isHalfOpen ? "half-open" : c.phase.name, jid: c.jid,
                                      unacked: c.unacked, pendingUpstream: c.pendingUpstream.count + c.pendingReceipts.count)
            }
        }
    }

    /// Every client ACK of an upstream message or receipt so far, in arrival order.
    public func clientAcks() -> [ClientAck] {
        onLoop { acksLog }
    }

    // MARK: Commands

    /// Sends CONNECTION_DRAINING on `connection` (default: the oldest ready one) in the prefixed form
    /// (ccs-protocol.md §5). From then on new downstream messages there get nack CONNECTION_DRAINING; messages
    /// already in flight are still answered per the ack latency; after `drainGraceMilliseconds` the emulator
    /// closes the stream, and replies still pending then are never sent.
    /// - Returns: the connection id drained.
    @discardableResult
    public func drain(connection: Int? = nil) throws(EmulatorError) -> Int {
        try onLoop { () -> Result<Int, EmulatorError> in
            readyConnection(connection, allowDraining: false).map { target in
                let grace = Double(configuration.drainGraceMilliseconds) / 1000
                target.startDraining(grace: grace) { [weak self, weak target] in
                    guard let self, let target, target.phase == .draining else { return }
                    self.counters.drainedConnections += 1
                    self.log("drain grace over; closing the stream", connection: target.id)
                    target.closeStream(condition: nil)
                }
                log("CONNECTION_DRAINING sent", connection: target.id)
                return target.id
            }
        }.get()
    }

    /// Sends `count` upstream messages on `connection` (default: the oldest ready one), ccs-protocol.md §3:
    /// `{"category":"com.example.app","data":{"text":UPSTREAM_TEXT,"n":"K"},"message_id":"u-K","from":"device-K","time_to_live":86400}`,
    /// XML-escaped. Each stays pending there until the client ACKs it.
    /// - Returns: the connection id and the message_ids sent, in order.
    @discardableResult
    public func sendUpstream(count: Int, connection: Int? = nil) throws(EmulatorError) -> (connection: Int, messageIDs: [String]) {
        try onLoop { () -> Result<(connection: Int, messageIDs: [String]), EmulatorError> in
            readyConnection(connection, allowDraining: true).map { target in
                var ids: [String] = []
                for _ in 0..<max(0, count) {
                    upstreamSequence += 1
                    let n = upstreamSequence
                    var data = OrderedJSON()
                    data.add("text", Self.upstreamText)
                    data.add("n", String(n))
                    var json = OrderedJSON()
                    json.add("category", "com.example.app")
                    json.add("data", raw: data.text)
                    let messageID = "\(configuration.upstreamMessageIDPrefix)\(n)"
                    json.add("message_id", messageID)
                    json.add("from", "device-\(n)")
                    json.add("time_to_live", .int(86400))
                    deliverUpstream(messageID: messageID, json: json.text, on: target)
                    counters.upstreamSent += 1
                    ids.append(messageID)
                }
                return (target.id, ids)
            }
        }.get()
    }

    /// Sends a delivery receipt for downstream message `originalMessageID` on `connection` (default: the
    /// oldest ready one), ccs-protocol.md §3; the client must ACK `dr2:ID`.
    @discardableResult
    public func sendReceipt(originalMessageID: String, connection: Int? = nil) throws(EmulatorError) -> Int {
        try onLoop { () -> Result<Int, EmulatorError> in
            readyConnection(connection, allowDraining: true).map { target in
                sendReceipt(originalMessageID: originalMessageID, target: seen[originalMessageID]?.target ?? "unknown-token",
                            on: target)
                return target.id
            }
        }.get()
    }

    /// Sends a XEP-0199 ping on `connection` (default: the oldest ready one); the answer counts in `pongsReceived`.
    @discardableResult
    public func ping(connection: Int? = nil) throws(EmulatorError) -> Int {
        try onLoop { () -> Result<Int, EmulatorError> in
            readyConnection(connection, allowDraining: true).map { target in
                pingSequence += 1
                target.write(ServerStanzas.ping(id: "emu-ping-\(pingSequence)", from: configuration.jidDomain))
                counters.pingsSent += 1
                return target.id
            }
        }.get()
    }

    /// Ends `connection`'s stream (default: the oldest live one) with `<stream:error><CONDITION/>…` (RFC 6120
    /// §4.9), `</stream:stream>` and a clean TLS close. `condition` must be lowercase letters and `-`, else
    /// `undefined-condition` is written.
    @discardableResult
    public func sendStreamError(condition: String, text: String? = nil, connection: Int? = nil) throws(EmulatorError) -> Int {
        try onLoop { () -> Result<Int, EmulatorError> in
            liveConnection(connection).map { target in
                log("sending stream error \(condition)", connection: target.id)
                target.closeStream(condition: condition, text: text)
                return target.id
            }
        }.get()
    }

    /// Drops `connection` (default: the oldest live one) abruptly: TLS abort, no close_notify, no stream end.
    @discardableResult
    public func disconnect(connection: Int? = nil) throws(EmulatorError) -> Int {
        try onLoop { () -> Result<Int, EmulatorError> in
            liveConnection(connection).map { target in
                log("disconnecting abruptly", connection: target.id)
                target.abort()
                return target.id
            }
        }.get()
    }

    // MARK: Events from connections (on the loop)

    private func accepted(_ tls: TLSConnection) {
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = EmulatorConnection(id: id, tls: tls, configuration: configuration, emulator: self)
        tls.delegate = connection
        connections[id] = connection
        counters.connectionsAccepted += 1
        if stopped {
            connection.abort()
            return
        }
        connection.loginTimer = loop.schedule(after: configuration.loginTimeoutSeconds) { [weak connection] in
            guard let connection, connection.phase == .negotiating else { return }
            connection.closeStream(condition: "connection-timeout", text: "no login in time")
        }
        log("accepted \(tls.remoteDescription)", connection: id)
        assignArmedFault(to: connection)
    }

    func authenticated(_ connection: EmulatorConnection) {
        counters.authenticated += 1
    }

    func authenticationFailed(_ connection: EmulatorConnection, reason: String) {
        counters.authFailures += 1
        log("authentication failed: \(reason)", connection: connection.id)
    }

    func bound(_ connection: EmulatorConnection) {
        connection.loginTimer?.cancel()
        connection.becomeReady()
        log("bound \(connection.jid ?? "")", connection: connection.id)
        armAfterLoginFault(connection)
        startPoisonUpstream(on: connection)
        if !orphanUpstream.isEmpty {
            let orphans = orphanUpstream
            orphanUpstream = []
            for orphan in orphans {
                deliverUpstream(messageID: orphan.messageID, json: orphan.json, on: connection)
                counters.upstreamRedelivered += 1
            }
        }
        writeEarlyTraffic(on: connection, acked: acksLog)  // a fault mode, off by default (NegotiationFaults)
        fireLoginFault(on: connection)  // an armed connection fault, if any (ConnectionFault)
    }

    func xmlError(on connection: EmulatorConnection, _ error: XMLStreamError) {
        counters.xmlErrors += 1
        log("closing on XML error \(error.streamErrorCondition): \(error.message)", connection: connection.id)
    }

    func unknownStanza(_ stanza: XMLElement, on connection: EmulatorConnection) {
        counters.unknownStanzas += 1
    }

    func connectionClosed(_ connection: EmulatorConnection, error: TLSError?) {
        connections[connection.id] = nil
        ackedOnClosedConnections[connection.id] = connection.ackedHere
        log("closed\(error.map { ": \($0)" } ?? "")", connection: connection.id)
        counters.receiptsUnackedAtClose += connection.pendingReceipts.count
        guard configuration.redeliverUnackedUpstream, !connection.pendingUpstream.isEmpty else { return }
        let pending = connection.pendingUpstream.sorted { $0.value.sequence < $1.value.sequence }
        connection.pendingUpstream = [:]
        for (messageID, entry) in pending {
            if let target = oldestReady(excluding: connection.id) {
                deliverUpstream(messageID: messageID, json: entry.json, on: target)
                counters.upstreamRedelivered += 1
            } else {
                orphanUpstream.append((messageID, entry.json))
            }
        }
    }

    /// A `<message>` (or an IQ reply) from a bound client.
    func received(_ stanza: XMLElement, on connection: EmulatorConnection) {
        guard connection.isOpenForTraffic else { return }
        if endStreamAfterLoginIfDue(stanza, on: connection) { return }
        if stanza.name == "iq" {
            if stanza.attribute("type") == "result", stanza.attribute("id")?.hasPrefix("emu-ping-") == true {
                counters.pongsReceived += 1
                sendPoisonUpstreamIfDue(on: connection)
            } else {
                counters.unknownStanzas += 1
            }
            return
        }
        switch ClientPayload.classify(stanza) {
        case .notCCS, .otherType:
            counters.unknownStanzas += 1
        case .ack(let messageID):
            if !rejectAck(stanza, messageID: messageID, on: connection) { clientAcked(messageID, on: connection) }
        case .unreadable(let id, let echoed, let text):
            counters.stanzaErrors += 1
            connection.write(ServerStanzas.stanzaError(id: id, echoedPayload: echoed, text: text))
        case .downstream(let message):
            downstream(message, on: connection)
        }
    }

    /// A plain downstream message from a bound client read from its payload text, without the stanza
    /// (`EmulatorConnection.takePayload`, `ClientPayload.plainDownstream(payload:of:)`): handled as `received`
    /// handles the stanza, and true, unless `received` would do something else first (connection not open for
    /// traffic, an after-login fault armed): then false, nothing done, and the stanza is built and goes
    /// through `received`.
    func receivedPlainDownstream(_ message: ClientPayload.Downstream, on connection: EmulatorConnection) -> Bool {
        guard connection.isOpenForTraffic, configuration.afterLoginFault == nil else { return false }
        downstream(message, on: connection)
        return true
    }

    // MARK: Downstream (ccs-protocol.md §3–5)

    private func downstream(_ message: ClientPayload.Downstream, on connection: EmulatorConnection) {
        counters.downstreamReceived += 1
        let id = message.messageID
        // One lookup: the entry is created (new) or updated in place; a drain nack does not count an attempt.
        var isNew = false
        let entry = Self.note(&seen[id, default: { isNew = true; return Seen(attempts: 0, target: message.target, ack: nil) }()],
                              target: message.target, countsAttempt: connection.phase != .draining)
        if !isNew {
            switch DownstreamArrival.classify(ack: entry.ack, connection: connection.id,
                                              connectionBrokenAt: connection.brokenAt) {
            case .resend:
                counters.resends += 1
            case .duplicateAfterAck:
                counters.duplicateMessageIDs += 1
                log("downstream \(id) received again after its ack", connection: connection.id)
            case .lateReadOnBrokenConnection:
                counters.lateReadsOnBrokenConnections += 1
                log("downstream \(id) read late on a broken connection (acked on connection \(entry.ack!.connection) after the break)",
                    connection: connection.id)
            }
        }
        if connection.unacked >= configuration.flowControlWindow {
            counters.flowControlViolations += 1
            log("flow-control violation: \(connection.unacked) unacked", connection: connection.id)
        }
        if connection.phase == .draining {
            counters.nacked[CCSErrorCode.connectionDraining.rawValue, default: 0] += 1
            connection.write(ServerStanzas.message(json: DownstreamPolicy.nack(
                messageID: id, from: message.target, code: .connectionDraining,
                description: DownstreamPolicy.describe(.connectionDraining, message.target ?? ""))))
            return
        }
        counters.maxAttemptsPerMessageID = max(counters.maxAttemptsPerMessageID, entry.attempts)
        let outcome = policy.isPlainAck(target: message.target) ? nil
            : policy.decide(messageID: id, target: message.target, attempt: entry.attempts)
        connection.unacked += 1
        counters.maxUnackedObserved = max(counters.maxUnackedObserved, connection.unacked)
        if connection.unacked >= configuration.maxUnackedPerConnection {
            log("too many unacked messages; ending the stream", connection: connection.id)
            connection.closeStream(condition: "policy-violation", text: "too many unacknowledged messages")
            return
        }
        let reply = ScheduledReply(due: 0, connection: connection, messageID: id, outcome: outcome, target: message.target,
                                   receiptRequested: message.deliveryReceiptRequested)
        if configuration.ackLatencyMilliseconds <= 0 {
            answer(reply)
        } else {
            var scheduled = reply
            scheduled.due = DispatchTime.now().uptimeNanoseconds + UInt64(configuration.ackLatencyMilliseconds) * 1_000_000
            replies.append(scheduled)
            if replyTimer?.isPending != true { armReplyTimer() }
        }
    }

    /// Updates a message's entry as one arrival does: the target (when given), and one more attempt when
    /// `countsAttempt`. Returns the entry as it was before, with the new attempts count.
    private static func note(_ entry: inout Seen, target: String?, countsAttempt: Bool) -> Seen {
        let before = entry
        if let target { entry.target = target }
        if countsAttempt { entry.attempts += 1 }
        var result = before
        result.attempts = entry.attempts
        return result
    }

    private func armReplyTimer() {
        guard repliesHead < replies.count else {
            replies.removeAll(keepingCapacity: true)
            repliesHead = 0
            return
        }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = replies[repliesHead].due
        let delay = due > now ? Double(due - now) / 1e9 : 0
        replyTimer = loop.schedule(after: delay) { [weak self] in self?.fireReplies() }
    }

    private func fireReplies() {
        let now = DispatchTime.now().uptimeNanoseconds
        while repliesHead < replies.count, replies[repliesHead].due <= now {
            let reply = replies[repliesHead]
            repliesHead += 1
            answer(reply)
        }
        if repliesHead > 4096, repliesHead * 2 > replies.count {
            replies.removeFirst(repliesHead)
            repliesHead = 0
        }
        armReplyTimer()
    }

    /// Writes the ack/nack of one message, and its receipt, unless its connection closed meanwhile or the
    /// server broke it (a client never reads what follows a corrupted record or a half-open turn).
    private func answer(_ reply: ScheduledReply) {
        let connection = reply.connection
        // Never acked there (§5): the client resends it elsewhere.
        guard connection.isOpenForTraffic, !connection.isHalfOpen, connection.brokenAt == nil else { return }
        connection.unacked -= 1
        if let outcome = reply.outcome {
            connection.write(ServerStanzas.message(json: outcome.json))
        } else {
            connection.writePlainAck(from: reply.target ?? "", messageID: reply.messageID)
        }
        switch reply.outcome {
        case .nack(let code, _)?:
            counters.nacked[code.rawValue, default: 0] += 1
        case .ack?, nil:
            counters.acked += 1
            connection.ackedHere += 1
            seen[reply.messageID]?.ack = AckMark(connection: connection.id, at: DispatchTime.now().uptimeNanoseconds)
            noteAck(reply.messageID, on: connection)  // Faults/ConnectionFault.swift
            if reply.receiptRequested, configuration.receipts {
                sendReceipt(originalMessageID: reply.messageID, target: seen[reply.messageID]?.target ?? "", on: connection)
            }
        }
    }

    func sendReceipt(originalMessageID: String, target: String, on connection: EmulatorConnection) {
        var data = OrderedJSON()
        data.add("message_status", "MESSAGE_SENT_TO_DEVICE")
        data.add("original_message_id", originalMessageID)
        data.add("device_registration_id", target)
        data.add("message_sent_timestamp", String(Int64(Date().timeIntervalSince1970 * 1000)))
        var json = OrderedJSON()
        json.add("category", "com.example")
        json.add("data", raw: data.text)
        json.add("message_id", "dr2:\(originalMessageID)")
        json.add("message_type", "receipt")
        json.add("time_to_live", .int(0))
        json.add("from", configuration.jidDomain)
        connection.pendingReceipts.insert("dr2:\(originalMessageID)")
        sentLog.receipt("dr2:\(originalMessageID)")
        connection.write(ServerStanzas.message(json: json.text, prefixed: true))
        counters.receiptsSent += 1
    }

    // MARK: Upstream (ccs-protocol.md §3)

    func deliverUpstream(messageID: String, json: String, on connection: EmulatorConnection) {
        connection.pendingUpstream[messageID] = (sequence: nextPendingSequence(), json: json)
        sentLog.upstream(messageID)
        connection.write(ServerStanzas.message(json: json))
    }

    private var pendingSequence = 0
    private func nextPendingSequence() -> Int {
        pendingSequence += 1
        return pendingSequence
    }

    private func clientAcked(_ messageID: String, on connection: EmulatorConnection) {
        if connection.pendingUpstream.removeValue(forKey: messageID) != nil {
            counters.upstreamAcked += 1
        } else if connection.pendingReceipts.remove(messageID) != nil {
            counters.receiptsAcked += 1
        } else {
            // An ACK for something not sent on this connection: it counts for nothing (§3).
            counters.unknownStanzas += 1
            return
        }
        acksLog.append(ClientAck(connection: connection.id, messageID: messageID))
    }

    // MARK: Helpers

    private func oldestReady(excluding: Int? = nil) -> EmulatorConnection? {
        connections.values.filter { $0.phase == .ready && $0.id != excluding }.min { $0.id < $1.id }
    }

    private func readyConnection(_ id: Int?, allowDraining: Bool) -> Result<EmulatorConnection, EmulatorError> {
        if let id {
            guard let connection = connections[id] else {
                return .failure(EmulatorError(.noSuchConnection, "no live connection \(id)"))
            }
            guard connection.phase == .ready || (allowDraining && connection.phase == .draining) else {
                return .failure(EmulatorError(.noReadyConnection, "connection \(id) is \(connection.phase.name)"))
            }
            return .success(connection)
        }
        guard let connection = oldestReady() else {
            return .failure(EmulatorError(.noReadyConnection, "no ready connection"))
        }
        return .success(connection)
    }

    func liveConnection(_ id: Int?) -> Result<EmulatorConnection, EmulatorError> {
        if let id {
            guard let connection = connections[id], connection.phase != .closing else {
                return .failure(EmulatorError(.noSuchConnection, "no live connection \(id)"))
            }
            return .success(connection)
        }
        guard let connection = connections.values.filter({ $0.phase != .closing }).min(by: { $0.id < $1.id }) else {
            return .failure(EmulatorError(.noSuchConnection, "no live connection"))
        }
        return .success(connection)
    }

    func log(_ message: String, connection: Int? = nil) {
        logSink(connection.map { "ccs-emulator: connection=\($0) \(message)" } ?? "ccs-emulator: \(message)")
    }

    /// Runs `body` on the loop: inline when already there, else hops and waits.
    func onLoop<T>(_ body: () -> T) -> T {
        loop.inEventLoop ? body() : loop.submitAndWait(body)
    }
}

import CCS
import Dispatch
import XMLStream

/// A transport or stream fault the emulator injects on one connection: at once on a live connection
/// (`CCSEmulator.injectFault(_:connection:)`, control command `fault MODE [ID]`), or on each of the next N
/// connections it accepts (`CCSEmulator.armFault(_:connections:)`, control command `fault MODE next N`).
///
/// On an armed connection, `splitRecords` applies from the accept (the TLS handshake and the login are
/// split too), `saslFailure` answers the `<auth>`, and every other mode fires right after the bind result
/// (right after login).
public enum ConnectionFault: Sendable, Equatable, CustomStringConvertible {
    /// Abrupt close: TCP FIN without TLS close_notify and without `</stream:stream>`.
    case close
    /// A TCP reset (`SO_LINGER` 0): the client's next read fails with ECONNRESET.
    case rst
    /// Half-open: from now on the emulator writes nothing and ignores every byte it reads (no FIN, no RST),
    /// until the client closes; the client must find the peer dead by its own keepalive.
    case halfOpen
    /// The first half of an upstream message stanza (message_id `cut-K`, never counted as sent), then a
    /// clean TLS close: the stream ends inside a stanza.
    case cutStanza
    /// One byte flipped in the encrypted body of the next TLS record (a whitespace keepalive the emulator
    /// writes at once): the client's TLS layer fails with `bad_record_mac` (RFC 8446 §5.2).
    case corruptRecord
    /// From now on every plaintext byte goes out as its own TLS record, one record per `send()`.
    case splitRecords
    /// The emulator stops reading from this connection for `seconds` (the client's writes back up into the
    /// kernel buffers and then its own write buffer), still writing; then reads again.
    case slowRead(seconds: Double)
    /// `<stream:error><CONDITION/></stream:error></stream:stream>` and a clean TLS close (RFC 6120 §4.9.3);
    /// `see-other-host` carries `other-host.invalid:5235` as its text (§4.9.3.19).
    case streamError(condition: String)
    /// The `<auth>` is answered `<failure><CONDITION/></failure>` (RFC 6120 §6.5) and the stream closed.
    /// Only as an armed fault (it fires at login).
    case saslFailure(condition: String)

    /// Every defined stream error condition (RFC 6120 §4.9.3.1–§4.9.3.25).
    public static let streamErrorConditions = [
        "bad-format", "bad-namespace-prefix", "conflict", "connection-timeout", "host-gone", "host-unknown",
        "improper-addressing", "internal-server-error", "invalid-from", "invalid-namespace", "invalid-xml",
        "not-authorized", "not-well-formed", "policy-violation", "remote-connection-failed", "reset",
        "resource-constraint", "restricted-xml", "see-other-host", "system-shutdown", "undefined-condition",
        "unsupported-encoding", "unsupported-feature", "unsupported-stanza-type", "unsupported-version",
    ]

    /// Every defined SASL failure condition (RFC 6120 §6.5.1–§6.5.11).
    public static let saslFailureConditions = [
        "aborted", "account-disabled", "credentials-expired", "encryption-required", "incorrect-encoding",
        "invalid-authzid", "invalid-mechanism", "malformed-request", "mechanism-too-weak", "not-authorized",
        "temporary-auth-failure",
    ]

    /// The mode names of the command form, for usage texts.
    public static let modeNames = ["close", "rst", "half-open", "cut-stanza", "corrupt-record", "split-records",
                                   "slow-read[:SECONDS]", "stream-error:CONDITION", "sasl-failure:CONDITION"]

    /// Parses the command form: `close`, `rst`, `half-open`, `cut-stanza`, `corrupt-record`, `split-records`,
    /// `slow-read[:SECONDS]` (default 5, 0 < SECONDS ≤ 3600), `stream-error:CONDITION`, `sasl-failure:CONDITION`
    /// (a condition is lowercase letters and `-`; undefined ones are allowed, to test the unknown case).
    /// - Returns: nil for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        let argument = parts.count > 1 ? parts[1] : nil
        func condition() -> String? {
            guard let argument, !argument.isEmpty,
                  argument.allSatisfy({ ("a"..."z").contains($0) || $0 == "-" }) else { return nil }
            return argument
        }
        switch parts.first ?? "" {
        case "close" where argument == nil: self = .close
        case "rst" where argument == nil: self = .rst
        case "half-open" where argument == nil: self = .halfOpen
        case "cut-stanza" where argument == nil: self = .cutStanza
        case "corrupt-record" where argument == nil: self = .corruptRecord
        case "split-records" where argument == nil: self = .splitRecords
        case "slow-read":
            guard let argument else { self = .slowRead(seconds: 5); return }
            guard let seconds = Double(argument), seconds > 0, seconds <= 3600 else { return nil }
            self = .slowRead(seconds: seconds)
        case "stream-error":
            guard let condition = condition() else { return nil }
            self = .streamError(condition: condition)
        case "sasl-failure":
            guard let condition = condition() else { return nil }
            self = .saslFailure(condition: condition)
        default:
            return nil
        }
    }

    /// The command form.
    public var description: String {
        switch self {
        case .close: "close"
        case .rst: "rst"
        case .halfOpen: "half-open"
        case .cutStanza: "cut-stanza"
        case .corruptRecord: "corrupt-record"
        case .splitRecords: "split-records"
        case .slowRead(let seconds): "slow-read:\(seconds)"
        case .streamError(let condition): "stream-error:\(condition)"
        case .saslFailure(let condition): "sasl-failure:\(condition)"
        }
    }
}

extension CCSEmulator {
    // MARK: Public API

    /// Injects `fault` on `connection` (default: the oldest live one) now.
    /// - Returns: the connection id.
    /// - Throws: `.noSuchConnection`; `.invalidCommand` for `saslFailure` (it needs a login: arm it instead).
    @discardableResult
    public func injectFault(_ fault: ConnectionFault, connection: Int? = nil) throws(EmulatorError) -> Int {
        if case .saslFailure = fault {
            throw EmulatorError(.invalidCommand, "sasl-failure fires at login: use `fault \(fault) next N`")
        }
        return try onLoop { () -> Result<Int, EmulatorError> in
            liveConnection(connection).map { target in
                fire(fault, on: target)
                return target.id
            }
        }.get()
    }

    /// Arms `fault` for each of the next `count` connections accepted (after those armed before). `count` 0
    /// clears every armed fault.
    public func armFault(_ fault: ConnectionFault, connections count: Int) {
        onLoop {
            if count <= 0 {
                armedFaults = []
            } else {
                armedFaults.append((fault, count))
            }
        }
    }

    /// Disarms every armed fault and ends every slow read now (half-open connections stay as they are).
    public func clearFaults() {
        onLoop {
            armedFaults = []
            for connection in connections.values where connection.tls.isReadingPaused {
                resumeReading(connection)
            }
        }
    }

    // MARK: Hooks (on the loop)

    /// At accept: gives the connection the next armed fault, if any.
    func assignArmedFault(to connection: EmulatorConnection) {
        guard !armedFaults.isEmpty else { return }
        let fault = armedFaults[0].fault
        armedFaults[0].remaining -= 1
        if armedFaults[0].remaining <= 0 { armedFaults.removeFirst() }
        log("armed fault \(fault)", connection: connection.id)
        switch fault {
        case .splitRecords:
            fire(fault, on: connection)
        case .saslFailure(let condition):
            counters.faultsInjected += 1
            connection.negotiation.forcedSASLFailure = condition
        default:
            connection.loginFault = fault
        }
    }

    /// Right after the bind result: fires the connection's armed fault.
    func fireLoginFault(on connection: EmulatorConnection) {
        guard let fault = connection.loginFault else { return }
        connection.loginFault = nil
        fire(fault, on: connection)
    }

    // MARK: Acks a fault may lose

    /// How far back a fault that drops data (`close`, `rst`, `corrupt-record`) takes the connection's acks
    /// with it: 0.5 s. An ack written that recently may still sit in the emulator's or the kernel's buffers, or in
    /// the corrupted record, so the client may never see it; its message is then no longer counted as acked,
    /// and a resend of it counts as a resend, not as a duplicate after an ack.
    static let ackLossWindowNanoseconds: UInt64 = 500_000_000

    /// An ack was written on `connection` (from `answer`).
    func noteAck(_ messageID: String, on connection: EmulatorConnection) {
        let now = DispatchTime.now().uptimeNanoseconds
        connection.recentAcks.append((messageID, now))
        while let oldest = connection.recentAcks.first, now - oldest.at > Self.ackLossWindowNanoseconds {
            _ = connection.recentAcks.popFirst()
        }
    }

    /// A data-dropping fault hit `connection`: its recent acks may never arrive.
    private func forgetRecentAcks(on connection: EmulatorConnection) {
        let now = DispatchTime.now().uptimeNanoseconds
        while let ack = connection.recentAcks.popFirst() {
            guard now - ack.at <= Self.ackLossWindowNanoseconds, seen[ack.messageID]?.acked == true else { continue }
            seen[ack.messageID]?.ack = nil
            counters.acksLostToFaults += 1
        }
    }

    // MARK: Faults

    private func fire(_ fault: ConnectionFault, on connection: EmulatorConnection) {
        counters.faultsInjected += 1
        log("injecting fault \(fault)", connection: connection.id)
        if fault.makesClientAbandon { connection.markBroken() }
        switch fault {
        case .close, .rst, .corruptRecord:
            forgetRecentAcks(on: connection)
        default:
            break
        }
        switch fault {
        case .close:
            connection.abort()
        case .rst:
            connection.closeTransport(reset: true)
        case .halfOpen:
            connection.isHalfOpen = true
        case .cutStanza:
            cutSequence += 1
            let stanza = ServerStanzas.message(json: #"{"category":"com.example.app","data":{"text":"cut here"},"message_id":"cut-\#(cutSequence)","from":"device-cut"}"#)
            let bytes = Array(stanza.utf8)
            connection.write(String(decoding: bytes[..<(bytes.count / 2)], as: UTF8.self))
            connection.closeTransport(reset: false)
        case .corruptRecord:
            guard connection.tls.isReady else { return }
            connection.tls.corruptNextRecord()
            connection.write(" ")  // whitespace between stanzas (RFC 6120 §11.7): the record that carries the flip
        case .splitRecords:
            connection.tls.splitsRecords = true
        case .slowRead(let seconds):
            guard connection.tls.isReady else { return }
            connection.tls.isReadingPaused = true
            connection.slowReadGeneration += 1
            let generation = connection.slowReadGeneration
            _ = loop.schedule(after: seconds) { [weak self, weak connection] in
                guard let self, let connection, connection.slowReadGeneration == generation else { return }
                self.resumeReading(connection)
            }
        case .streamError(let condition):
            connection.closeStream(condition: condition,
                                   text: condition == "see-other-host" ? "other-host.invalid:5235" : nil)
        case .saslFailure:
            break  // only armed (assignArmedFault)
        }
    }

    private func resumeReading(_ connection: EmulatorConnection) {
        guard connection.tls.isReady, connection.tls.isReadingPaused else { return }
        log("reading again", connection: connection.id)
        connection.tls.isReadingPaused = false
    }

    // MARK: Control command

    /// `fault MODE [ID | next N]`, `fault clear`: see `handle(commandLine:)`.
    func faultCommand(_ arguments: [String]) throws(EmulatorError) -> String {
        let usage = "usage: fault MODE [ID | next N] | fault clear; MODE is \(ConnectionFault.modeNames.joined(separator: ", "))"
        guard let mode = arguments.first else { throw EmulatorError(.invalidCommand, usage) }
        if mode == "clear", arguments.count == 1 {
            clearFaults()
            return #"{"ok":true}"#
        }
        guard let fault = ConnectionFault(parsing: mode) else {
            throw EmulatorError(.invalidCommand, "unknown fault \(mode); \(usage)")
        }
        let rest = Array(arguments.dropFirst())
        switch rest.count {
        case 0:
            return #"{"ok":true,"connection":\#(try injectFault(fault))}"#
        case 1:
            guard let id = Int(rest[0]) else { throw EmulatorError(.invalidCommand, usage) }
            return #"{"ok":true,"connection":\#(try injectFault(fault, connection: id))}"#
        case 2 where rest[0] == "next":
            guard let count = Int(rest[1]), (1...1_000_000).contains(count) else {
                throw EmulatorError(.invalidCommand, "fault \(mode) next N: N in 1...1000000")
            }
            armFault(fault, connections: count)
            return #"{"ok":true,"armed":\#(count)}"#
        default:
            throw EmulatorError(.invalidCommand, usage)
        }
    }
}

import TLS
import XMLStream

/// Everything the CCS emulator can be told (behaviour per ccs-protocol.md).
public struct EmulatorConfiguration: Sendable {
    /// One address to listen on; port 0 = an ephemeral port (see `CCSEmulator.ports`).
    public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
        /// A numeric address: "127.0.0.1", "::1", "0.0.0.0".
        public var host: String
        public var port: Int
        public init(host: String = "127.0.0.1", port: Int) {
            self.host = host
            self.port = port
        }
        /// Parses `HOST:PORT` or `[V6]:PORT`; nil when malformed or the port is outside 0...65535.
        public init?(parsing text: String) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  (0...65535).contains(port) else { return nil }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            self.init(host: host, port: port)
        }
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Where the server certificate comes from.
    public enum Certificate: Sendable, Equatable {
        /// A throwaway CA and a server certificate it signs, made at `start()`, with SAN DNS:localhost and
        /// IP:127.0.0.1 (and IP:::1); the CA PEM is `CCSEmulator.caCertificatePEM`.
        case generated
        /// A given certificate chain (leaf first) and private key, PEM text.
        case provided(certificateChainPEM: String, privateKeyPEM: String)
    }

    /// Listening addresses; default 127.0.0.1:5235 (production port) and 127.0.0.1:5236 (pre-production).
    public var listen: [ListenAddress]
    /// The sender ID clients must log in as (SASL user local part, ccs-protocol.md §1).
    public var senderID: String
    /// The server key clients must present (SASL PLAIN password). Never logged.
    public var serverKey: String
    /// The JID domain: SASL user domain, header `from`, bound JID domain. Default `gcm.googleapis.com`.
    public var jidDomain: String
    public var certificate: Certificate
    /// When set with `.generated`, `start()` writes `ca.pem` into this directory (for a client's `--ca-file`).
    public var caDirectory: String?
    /// Milliseconds between a downstream message arriving and its ack/nack; 0 = in the same loop turn.
    public var ackLatencyMilliseconds: Int
    /// Prefix rules, tried in order (ccs-protocol.md §4). Default `NackRule.defaults`.
    public var nackRules: [NackRule]
    /// Probability 0...1 that a downstream message no rule matched gets nack SERVICE_UNAVAILABLE. Default 0.
    public var nackRate: Double
    /// Seed of the random generator behind `nackRate` (same seed, same messages: same outcomes).
    public var seed: UInt64
    /// Send a delivery receipt after acking a message with `delivery_receipt_requested: true` (§3). Default on.
    public var receipts: Bool
    /// Milliseconds from sending CONNECTION_DRAINING until the emulator closes that stream (§5). Default 1000.
    public var drainGraceMilliseconds: Int
    /// Redeliver upstream messages not ACKed when their connection closes on another live connection (§3). Default on.
    public var redeliverUnackedUpstream: Bool
    /// Unacked-by-the-emulator downstream messages per connection above which an arrival counts as a
    /// flow-control violation (§5). Default 100.
    public var flowControlWindow: Int
    /// Unacked downstream messages per connection at which the emulator gives up on the client and ends the
    /// stream with `policy-violation` (memory bound against a runaway client). Default 10 000.
    public var maxUnackedPerConnection: Int
    /// Inbound stanza bounds (a stanza over the size ends the stream with `policy-violation`).
    public var limits: XMLStreamLimits
    /// Seconds an unauthenticated connection may take to bind a resource before `connection-timeout`. Default 30.
    public var loginTimeoutSeconds: Double
    /// Outbound bytes buffered per connection before the emulator drops a client that does not read. Default 4 MiB.
    public var maxBufferedWriteBytes: Int
    /// Login fault modes (early traffic before the session result, noise around stream headers). Default off.
    public var negotiationFaults = NegotiationFaults()

    // Fault modes (Sources/CCSEmulator/Faults), set after init; all off by default.
    /// End every stream right after login in this form (`AfterLoginFault`); nil = off.
    public var afterLoginFault: AfterLoginFault?
    /// Milliseconds after login at which `afterLoginFault` fires when no message arrived first. Default 100.
    public var afterLoginFaultDelayMilliseconds = 100
    /// Answer every client ACK with this error instead of taking it (`AckRejection`); nil = off.
    public var ackRejection: AckRejection?
    /// Prefix of the message_ids the `upstream` command makes: `u-` gives `u-1`, `u-2`, … Default `u-`.
    public var upstreamMessageIDPrefix = "u-"
    /// Fault mode: on the first ready connection, send upstream messages and a receipt a client cannot fully
    /// decode (lone surrogate escapes, a number no Double holds, broken JSON); see `poisonUpstreamPayloads`.
    public var poisonUpstream = false

    public init(
        listen: [ListenAddress] = [ListenAddress(port: 5235), ListenAddress(port: 5236)],
        senderID: String, serverKey: String, jidDomain: String = "gcm.googleapis.com",
        certificate: Certificate = .generated, caDirectory: String? = nil,
        ackLatencyMilliseconds: Int = 0, nackRules: [NackRule] = NackRule.defaults, nackRate: Double = 0,
        seed: UInt64 = 1, receipts: Bool = true, drainGraceMilliseconds: Int = 1000,
        redeliverUnackedUpstream: Bool = true, flowControlWindow: Int = 100, maxUnackedPerConnection: Int = 10_000,
        limits: XMLStreamLimits = XMLStreamLimits(), loginTimeoutSeconds: Double = 30,
        maxBufferedWriteBytes: Int = 4 << 20
    ) {
        self.listen = listen
        self.senderID = senderID
        self.serverKey = serverKey
        self.jidDomain = jidDomain
        self.certificate = certificate
        self.caDirectory = caDirectory
        self.ackLatencyMilliseconds = ackLatencyMilliseconds
        self.nackRules = nackRules
        self.nackRate = nackRate
        self.seed = seed
        self.receipts = receipts
        self.drainGraceMilliseconds = drainGraceMilliseconds
        self.redeliverUnackedUpstream = redeliverUnackedUpstream
        self.flowControlWindow = flowControlWindow
        self.maxUnackedPerConnection = maxUnackedPerConnection
        self.limits = limits
        self.loginTimeoutSeconds = loginTimeoutSeconds
        self.maxBufferedWriteBytes = maxBufferedWriteBytes
    }
}

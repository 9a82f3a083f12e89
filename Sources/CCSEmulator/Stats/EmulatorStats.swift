import CCS

/// Counters of one emulator run; a snapshot, taken on the loop by `CCSEmulator.stats()`.
public struct EmulatorStats: Sendable, Equatable {
    /// TLS connections accepted (handshake started).
    public var connectionsAccepted = 0
    /// SASL successes.
    public var authenticated = 0
    /// SASL failures (wrong sender ID, key, JID domain, mechanism or encoding).
    public var authFailures = 0
    /// Connections open now (accepted and not yet closed).
    public var liveConnections = 0
    /// Downstream messages received (every attempt, every connection).
    public var downstreamReceived = 0
    /// Acks sent.
    public var acked = 0
    /// Nacks sent, by error code.
    public var nacked: [String: Int] = [:]
    /// Stanza errors sent (unreadable downstream messages, ccs-protocol.md §3).
    public var stanzaErrors = 0
    /// Delivery receipts sent, and receipts the client ACKed.
    public var receiptsSent = 0
    public var receiptsAcked = 0
    /// Receipts still un-ACKed when their connection closed (the emulator does not redeliver receipts): the
    /// client's ACK was lost with the connection, or never written.
    public var receiptsUnackedAtClose = 0
    /// Upstream messages sent (first deliveries), ACKed by the client, and redelivered after a connection closed.
    public var upstreamSent = 0
    public var upstreamAcked = 0
    public var upstreamRedelivered = 0
    /// Downstream messages that arrived while their connection already had `flowControlWindow` (100)
    /// messages unacked by the emulator (ccs-protocol.md §5): a client bug.
    public var flowControlViolations = 0
    /// The most unacked-by-the-emulator downstream messages seen on one connection, counting the arrival.
    public var maxUnackedObserved = 0
    /// Downstream message_ids received again after the emulator had acked them: a client bug.
    public var duplicateMessageIDs = 0
    /// Downstream message_ids read again on a connection the server had broken (a fault, or the emulator
    /// ending the stream) after they were acked on another connection after that break: copies the client
    /// wrote before it knew of the break, read late (e.g. after a slow read). Not a client bug; not counted in
    /// `duplicateMessageIDs`.
    public var lateReadsOnBrokenConnections = 0
    /// Downstream message_ids received again that had never been acked (after a nack or a lost connection): expected.
    public var resends = 0
    /// Stanzas that are not CCS traffic or have an unknown message_type, client NACKs, and ACKs for ids
    /// the emulator did not send on that connection.
    public var unknownStanzas = 0
    /// Streams the emulator ended because the client's XML broke a rule (parser stream errors).
    public var xmlErrors = 0
    /// Server pings sent and answered.
    public var pingsSent = 0
    public var pongsReceived = 0
    /// Streams the emulator closed after CONNECTION_DRAINING.
    public var drainedConnections = 0
    /// The most attempts one downstream message_id made (arrivals not answered with CONNECTION_DRAINING).
    public var maxAttemptsPerMessageID = 0
    /// Streams ended by the after-login fault (`EmulatorConfiguration.afterLoginFault`).
    public var streamsEndedAfterLogin = 0
    /// Client ACKs answered with an error by `EmulatorConfiguration.ackRejection` (not taken).
    public var acksRejected = 0
    /// Connection faults fired (`ConnectionFault`: injected, or armed and reached).
    public var faultsInjected = 0
    /// Acks written within 0.5 s before a fault that drops data (`close`, `rst`, `corrupt-record`), which the
    /// client may never have seen: those messages count as not acked (a resend is no duplicate).
    public var acksLostToFaults = 0

    public init() {}

    /// The total of `nacked`.
    public var nackedTotal: Int { nacked.values.reduce(0, +) }

    /// The stats as one JSON object, snake_case keys (e.g. `"flow_control_violations":0`, `"nacked":{"BAD_REGISTRATION":1}`).
    public var json: String {
        var nackedObject: [String: JSONValue] = [:]
        for (code, count) in nacked { nackedObject[code] = .int(Int64(count)) }
        let fields: [(String, Int)] = [
            ("connections_accepted", connectionsAccepted), ("authenticated", authenticated),
            ("auth_failures", authFailures), ("live_connections", liveConnections),
            ("downstream_received", downstreamReceived), ("acked", acked), ("nacked_total", nackedTotal),
            ("stanza_errors", stanzaErrors), ("receipts_sent", receiptsSent), ("receipts_acked", receiptsAcked),
            ("receipts_unacked_at_close", receiptsUnackedAtClose),
            ("upstream_sent", upstreamSent), ("upstream_acked", upstreamAcked),
            ("upstream_redelivered", upstreamRedelivered), ("flow_control_violations", flowControlViolations),
            ("max_unacked_observed", maxUnackedObserved), ("duplicate_message_ids", duplicateMessageIDs),
            ("late_reads_on_broken_connections", lateReadsOnBrokenConnections),
            ("resends", resends), ("unknown_stanzas", unknownStanzas), ("xml_errors", xmlErrors),
            ("pings_sent", pingsSent), ("pongs_received", pongsReceived), ("drained_connections", drainedConnections),
            ("max_attempts_per_message_id", maxAttemptsPerMessageID), ("streams_ended_after_login", streamsEndedAfterLogin),
            ("acks_rejected", acksRejected), ("faults_injected", faultsInjected),
            ("acks_lost_to_faults", acksLostToFaults),
        ]
        var out = OrderedJSON()
        for (key, value) in fields { out.add(key, .int(Int64(value))) }
        out.add("nacked", .object(nackedObject))
        return out.text
    }
}

/// Where and when the emulator acked a downstream message_id (its latest ack): the connection id and the
/// loop's uptime in nanoseconds when the ack was written.
struct AckMark: Equatable {
    var connection: Int
    var at: UInt64
}

/// What one more arrival of a downstream message_id the emulator has seen before is (ccs-protocol.md §3–5).
///
/// A client that resends a message after its ack breaks the protocol; one that resends after a nack or a
/// lost connection does not. A third case is neither: after the server itself broke a connection (a fault
/// that makes the client abandon it, `ConnectionFault.makesClientAbandon`, or the emulator ending the
/// stream), every stanza it still reads there was written before the client learned of the break (e.g. it
/// sat in the kernel's buffer while the server was not reading). The client then resends what was in
/// flight on another connection, which acks it; the old copy read afterwards is a late read of an earlier
/// write, not a send after the ack.
enum DownstreamArrival: Equatable {
    /// Never acked so far (after a nack, an ack lost to a fault, or a lost connection): expected.
    case resend
    /// Received again after the emulator acked it: a client bug (`EmulatorStats.duplicateMessageIDs`).
    case duplicateAfterAck
    /// Read on a connection the server had broken, of a message acked on another connection after that
    /// break: written before the client knew of the break (`EmulatorStats.lateReadsOnBrokenConnections`).
    case lateReadOnBrokenConnection

    /// Classifies an arrival on `connection` of a message_id seen before.
    /// - Parameters:
    ///   - ack: the message's latest ack, nil when not acked (never, or the ack was lost to a fault).
    ///   - connection: the connection id it arrived on.
    ///   - connectionBrokenAt: when the server broke that connection (uptime, ns), nil while it is healthy.
    /// - Returns: `.lateReadOnBrokenConnection` only when the connection was broken, the ack was written on
    ///   another connection, and after the break (before it, the client may have had the ack when it wrote
    ///   this copy); `.duplicateAfterAck` for every other acked message.
    static func classify(ack: AckMark?, connection: Int, connectionBrokenAt: UInt64?) -> DownstreamArrival {
        guard let ack else { return .resend }
        if let broken = connectionBrokenAt, ack.connection != connection, ack.at > broken {
            return .lateReadOnBrokenConnection
        }
        return .duplicateAfterAck
    }
}

extension ConnectionFault {
    /// Whether the client must abandon the connection once it sees this fault: every mode but
    /// `split-records` (traffic flows) and `slow-read` (the server reads again later).
    var makesClientAbandon: Bool {
        switch self {
        case .close, .rst, .halfOpen, .cutStanza, .corruptRecord, .streamError, .saslFailure: true
        case .splitRecords, .slowRead: false
        }
    }
}

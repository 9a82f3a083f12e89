import CCS
import TLS

/// The message_ids one emulator run dealt with, for checks that span client restarts (the crash test):
/// which downstream messages arrived and were acked, which upstream messages and receipts were sent, and
/// which of those the client ACKed. A snapshot, taken on the loop by `CCSEmulator.messageIDs()`.
public struct EmulatorMessageIDs: Sendable, Equatable {
    /// Downstream message_ids received at least once (any attempt, any connection, drain nacks included), sorted.
    public var downstreamReceived: [String]
    /// Downstream message_ids the emulator acked at least once, sorted.
    public var downstreamAcked: [String]
    /// Upstream message_ids sent, in first-send order (a redelivery is not listed again).
    public var upstreamSent: [String]
    /// Receipt message_ids (`dr2:ORIGINAL`) sent, in first-send order. Unlike upstream messages, receipts
    /// are not redelivered when their connection closes un-ACKed.
    public var receiptsSent: [String]
    /// Upstream and receipt message_ids the client ACKed on the connection they were pending on, in arrival
    /// order (an ACK takes the message off that connection's pending list, so each is listed once per delivery
    /// ACKed).
    public var clientAcked: [String]
    /// The emulator connection id (1, 2, … in accept order) each of `clientAcked` arrived on.
    public var clientAckedOn: [Int]

    /// One JSON object: `{"downstream_received":[…],"downstream_acked":[…],"upstream_sent":[…],
    /// "receipts_sent":[…],"client_acked":[…],"client_acked_on":[connection ids]}`.
    public var json: String {
        var out = OrderedJSON()
        for (key, ids) in [("downstream_received", downstreamReceived), ("downstream_acked", downstreamAcked),
                           ("upstream_sent", upstreamSent), ("receipts_sent", receiptsSent),
                           ("client_acked", clientAcked)] {
            out.add(key, .array(ids.map { .string($0) }))
        }
        out.add("client_acked_on", .array(clientAckedOn.map { .int(Int64($0)) }))
        return out.text
    }
}

/// Upstream and receipt message_ids as first sent (loop-confined, part of `CCSEmulator`).
struct SentMessageIDs {
    private(set) var upstream: [String] = []
    private(set) var receipts: [String] = []
    private var known: Set<String> = []

    mutating func upstream(_ messageID: String) {
        if known.insert(messageID).inserted { upstream.append(messageID) }
    }

    mutating func receipt(_ messageID: String) {
        if known.insert(messageID).inserted { receipts.append(messageID) }
    }
}

extension CCSEmulator {
    /// The message_ids of this run so far (`ccs-emulator --received-ids-file` writes them on exit).
    public func messageIDs() -> EmulatorMessageIDs {
        let body = { () -> EmulatorMessageIDs in
            EmulatorMessageIDs(downstreamReceived: self.seen.keys.sorted(),
                               downstreamAcked: self.seen.keys(where: \.acked).sorted(),
                               upstreamSent: self.sentLog.upstream, receiptsSent: self.sentLog.receipts,
                               clientAcked: self.clientAcks().map(\.messageID),
                               clientAckedOn: self.clientAcks().map(\.connection))
        }
        return loop.inEventLoop ? body() : loop.submitAndWait(body)
    }
}

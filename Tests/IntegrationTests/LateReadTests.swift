import CCS
@testable import CCSEmulator
import Foundation
import Testing
import XMPP

/// The emulator's rule for a downstream message_id arriving again: a duplicate after an ack (a client bug),
/// or a late read on a connection the server broke (a copy written before the client knew of the break).
@Suite struct DownstreamArrivalTests {
    @Test func neverAckedIsAResend() {
        #expect(DownstreamArrival.classify(ack: nil, connection: 1, connectionBrokenAt: nil) == .resend)
        #expect(DownstreamArrival.classify(ack: nil, connection: 1, connectionBrokenAt: 10) == .resend)
    }

    @Test func ackedElsewhereAfterTheBreakIsALateRead() {
        let ack = AckMark(connection: 2, at: 20)
        #expect(DownstreamArrival.classify(ack: ack, connection: 1, connectionBrokenAt: 10) == .lateReadOnBrokenConnection)
    }

    @Test func onAHealthyConnectionItIsADuplicate() {
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 2, at: 20), connection: 1, connectionBrokenAt: nil)
                == .duplicateAfterAck)
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 1, at: 20), connection: 1, connectionBrokenAt: nil)
                == .duplicateAfterAck)
    }

    @Test func onTheConnectionWhereItWasAckedItIsADuplicate() {
        // Acked there before the break, or after it: either way the client had that connection's ack stream.
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 1, at: 5), connection: 1, connectionBrokenAt: 10)
                == .duplicateAfterAck)
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 1, at: 20), connection: 1, connectionBrokenAt: 10)
                == .duplicateAfterAck)
    }

    @Test func ackedElsewhereBeforeTheBreakIsADuplicate() {
        // The client may have had the ack when it wrote this copy.
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 2, at: 5), connection: 1, connectionBrokenAt: 10)
                == .duplicateAfterAck)
        #expect(DownstreamArrival.classify(ack: AckMark(connection: 2, at: 10), connection: 1, connectionBrokenAt: 10)
                == .duplicateAfterAck)
    }

    @Test func everyFaultButSplitRecordsAndSlowReadBreaksTheConnection() {
        let breaking: [ConnectionFault] = [.close, .rst, .halfOpen, .cutStanza, .corruptRecord,
                                           .streamError(condition: "conflict"), .saslFailure(condition: "aborted")]
        #expect(breaking.filter { !$0.makesClientAbandon }.isEmpty)
        #expect(!ConnectionFault.splitRecords.makesClientAbandon)
        #expect(!ConnectionFault.slowRead(seconds: 1).makesClientAbandon)
    }
}

/// The same rule end to end: a real client, two connections, the first one not read (slow read) while the
/// client writes a message on it.
@Suite(.serialized) struct LateReadLoopbackTests {
    static let message = CCSStanza.downstream(messageID: "late-1", json: #"{"to":"tok","message_id":"late-1"}"#)

    /// Slow read on connection 1, the message written there; a corrupted record breaks connection 1, the
    /// client resends on connection 2, which acks; then connection 1 is read again and yields the old copy.
    @Test func oldCopyReadAfterACorruptRecordIsALateReadNotADuplicate() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (first, firstProbe) = await harness.connectReady()
        let (second, secondProbe) = await harness.connectReady()
        try harness.emulator.injectFault(.slowRead(seconds: 3600), connection: 1)
        harness.send(first, Self.message)
        try harness.emulator.injectFault(.corruptRecord, connection: 1)
        await waitUntil("the client to drop connection 1") { firstProbe.end != nil }
        harness.send(second, Self.message)
        await waitUntil("the ack on connection 2") { secondProbe.acks.contains { $0.messageID == "late-1" } }
        #expect(harness.emulator.stats().downstreamReceived == 1)
        harness.emulator.clearFaults()  // connection 1 is read again: the copy written before the break
        await waitUntil("the old copy read") { harness.emulator.stats().downstreamReceived == 2 }
        let stats = harness.emulator.stats()
        #expect(stats.lateReadsOnBrokenConnections == 1)
        #expect(stats.duplicateMessageIDs == 0)
        harness.close(first)
        harness.close(second)
    }

    /// The same without the break: connection 1 is healthy, so the copy read there after the ack on
    /// connection 2 still counts as a duplicate after an ack.
    @Test func oldCopyReadOnAHealthyConnectionIsStillADuplicate() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (first, _) = await harness.connectReady()
        let (second, secondProbe) = await harness.connectReady()
        try harness.emulator.injectFault(.slowRead(seconds: 3600), connection: 1)
        harness.send(first, Self.message)
        harness.send(second, Self.message)
        await waitUntil("the ack on connection 2") { secondProbe.acks.contains { $0.messageID == "late-1" } }
        harness.emulator.clearFaults()
        await waitUntil("the old copy read") { harness.emulator.stats().downstreamReceived == 2 }
        let stats = harness.emulator.stats()
        #expect(stats.duplicateMessageIDs == 1)
        #expect(stats.lateReadsOnBrokenConnections == 0)
        harness.close(first)
        harness.close(second)
    }
}

/// An ack due on a connection the server broke before it was written never reaches the client: it does not
/// count, so the client's resend elsewhere is a resend, not a duplicate after an ack.
@Suite(.serialized) struct AckAfterBreakTests {
    @Test func ackDueAfterACorruptRecordDoesNotCount() async throws {
        let harness = try EmulatorHarness { $0.ackLatencyMilliseconds = 2000 }
        defer { harness.shutdown() }
        let (first, firstProbe) = await harness.connectReady()
        let (second, secondProbe) = await harness.connectReady()
        harness.send(first, LateReadLoopbackTests.message)
        await waitUntil("the message on connection 1") { harness.emulator.stats().downstreamReceived == 1 }
        // Not reading connection 1 keeps its client's close unseen, so the connection stays open when the ack
        // is due (as when the fault lands in the ack latency and the close is still on its way).
        try harness.emulator.injectFault(.slowRead(seconds: 3600), connection: 1)
        try harness.emulator.injectFault(.corruptRecord, connection: 1)  // before its ack is due
        await waitUntil("the client to drop connection 1") { firstProbe.end != nil }
        // Replies go out in arrival order: once this one's ack is in, connection 1's reply was due and handled.
        harness.send(second, CCSStanza.downstream(messageID: "later-1", json: #"{"to":"tok","message_id":"later-1"}"#))
        await waitUntil("the ack of later-1") { secondProbe.acks.contains { $0.messageID == "later-1" } }
        harness.send(second, LateReadLoopbackTests.message)  // the client's resend after losing connection 1
        await waitUntil("the ack of the resend") { secondProbe.acks.contains { $0.messageID == "late-1" } }
        let stats = harness.emulator.stats()
        #expect(stats.duplicateMessageIDs == 0)
        #expect(stats.resends == 1)
        #expect(stats.acked == 2)
        harness.close(first)
        harness.close(second)
    }
}

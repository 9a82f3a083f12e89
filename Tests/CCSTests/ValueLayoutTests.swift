import Foundation
import Testing
@testable import CCS

/// The per-message values stay within 128 bytes, the largest value the compiler copies with inline moves
/// (a larger one is copied by a call to `memmove`, and each is copied many times on its way through the
/// daemon). A field added to one of them should keep it there: box what is rare (see `GroupOutcomeBox`).
@Suite struct ValueLayoutTests {
    /// A message and the intake item that carries it with its line number (`CCSDaemon.IntakeItem`: 8 bytes
    /// more, after alignment to 8).
    @Test func downstreamMessageLeavesRoomForItsLineNumber() {
        #expect(MemoryLayout<DownstreamMessage>.size <= 120)
        #expect(MemoryLayout<Result<DownstreamMessage, ValidationError>>.size <= 128)
    }

    /// An ack as the parser returns it and as the daemon passes it on.
    @Test func inboundMessageFitsInlineCopies() {
        #expect(MemoryLayout<InboundMessage>.size <= 128)
        #expect(MemoryLayout<InboundMessage?>.size <= 128)
        #expect(MemoryLayout<Result<InboundMessage?, InboundParseError>>.size <= 128)
    }

    /// The boxed device-group counts read back, compare by value and survive a copy's change.
    @Test func groupOutcomeIsKeptByValue() {
        let group = GroupOutcome(success: .int(1), failure: .int(2), failedRegistrationIDs: .array([.string("a"), .string("b")]))
        var ack = InboundMessage.Ack(messageID: "m", group: group)
        let copy = ack
        #expect(ack.group == group)
        #expect(ack == InboundMessage.Ack(messageID: "m", group: GroupOutcome(success: .int(1), failure: .int(2),
                                                                                 failedRegistrationIDs: .array([.string("a"), .string("b")]))))
        ack.group = nil
        #expect(ack.group == nil && copy.group == group && ack != copy)
        var nack = InboundMessage.Nack(messageID: "m", error: .deviceUnregistered, group: nil)
        #expect(nack.group == nil)
        nack.group = group
        #expect(nack.group == group && nack != InboundMessage.Nack(messageID: "m", error: .deviceUnregistered, group: nil))
    }

    /// A message intake wrote with `data` kept only in its text reads `data` back, with or without one.
    @Test func encodedDataRangeReadsBack() throws {
        let withData = try DownstreamIntake.parse(utf8: Array(#"{"to":"bench-token-7-APA91bHPRgkFLJu4x","data":{"k":"v"}}"#.utf8), now: Date()).get()
        #expect(withData.data == ["k": "v"])
        #expect(withData.encoded?.dataRange != nil)
        let withoutData = try DownstreamIntake.parse(utf8: Array(#"{"to":"bench-token-7-APA91bHPRgkFLJu4x"}"#.utf8), now: Date()).get()
        #expect(withoutData.data == nil)
        #expect(withoutData.encoded != nil && withoutData.encoded?.dataRange == nil)
        #expect(withData.withMessageID("id-1").data == ["k": "v"])
    }
}

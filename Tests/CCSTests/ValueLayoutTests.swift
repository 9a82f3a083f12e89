import Foundation
import Testing
@testable import CCS

/// The per-message values stay within 128 bytes, the largest value the compiler copies with inline moves
/// (a larger one is copied by a call to `memmove`, and each is copied many times on its way through the
/// daemon). A field added to one of them should keep it there: box what is rare (see `GroupOutcome`, `MessageRecord`).
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

    /// An action and the event it carries: every per-message action (`send`, `persist`, `record` of an ack or
    /// nack) is moved through the dispatcher's and the daemon's queues several times per message.
    @Test func dispatcherActionsAndEventsFitInlineCopies() {
        #expect(MemoryLayout<DispatcherAction>.size <= 128)
        #expect(MemoryLayout<RecordRequest>.size <= 128)
        #expect(MemoryLayout<DispatcherEvent>.size <= 72)
        #expect(MemoryLayout<PersistResult>.size <= 128)
        #expect(MemoryLayout<MessageRecord>.size <= 64)
        #expect(MemoryLayout<GroupOutcome?>.size == MemoryLayout<Int>.size)
    }

    /// Device-group counts behave as a value: a copy's change leaves the original as it was, and two outcomes
    /// made apart compare by their fields.
    @Test func groupOutcomeCopiesOnWrite() {
        let original = GroupOutcome(success: .int(1), failure: .int(2), failedRegistrationIDs: .array([.string("a")]),
                                    decodeError: "failure: read as null")
        var copy = original
        #expect(copy == original)
        copy.success = .int(3)
        copy.failure = .number("1E2")
        copy.failedRegistrationIDs = .array([])
        copy.decodeError = nil
        #expect(original.success == .int(1) && original.failure == .int(2))
        #expect(original.failedRegistrationIDs == .array([.string("a")]) && original.decodeError == "failure: read as null")
        #expect(copy.success == .int(3) && copy.failure == .number("1E2") && copy.failedRegistrationIDs == .array([]))
        #expect(copy.decodeError == nil && copy.failureCount == 100 && copy != original)
        #expect(copy == GroupOutcome(success: .int(3), failure: .number("1E2"), failedRegistrationIDs: .array([])))
        #expect(GroupOutcome(success: nil, failure: nil, failedRegistrationIDs: .array([.string("x")])).failure == .int(1))
    }

    /// The indirect (rare) events keep their payloads and compare by value.
    @Test func indirectEventsKeepTheirPayloads() {
        let receipt = InboundMessage.Receipt(messageID: "dr2:m", from: "gcm.googleapis.com", originalMessageID: "m", status: "MESSAGE_SENT_TO_DEVICE")
        let upstream = InboundMessage.Upstream(messageID: "u", from: "device", category: "app", data: .object(["k": .string("v")]))
        let events: [DispatcherEvent] = [
            .receipt(receipt), .upstream(upstream),
            .rejected(messageID: "m", field: "to", error: "is missing", line: 3, retryable: true, outcome: "{}"),
        ]
        let copies = events
        #expect(copies == events)
        guard case .receipt(let r) = copies[0], case .upstream(let u) = copies[1],
              case .rejected(let id, let field, let error, let line, let retryable, let outcome) = copies[2] else {
            Issue.record("an indirect event changed its case")
            return
        }
        #expect(r == receipt && u == upstream)
        #expect(id == "m" && field == "to" && error == "is missing" && line == 3 && retryable && outcome == "{}")
        #expect(DispatcherEvent.receipt(receipt) != .receipt(InboundMessage.Receipt(messageID: "dr2:m", from: "other")))
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

import Foundation
import Testing
import XMLStream
@testable import CCS

/// No poison messages (issue 7 item 4): what ccsd cannot fully decode is still handed over and ACKed when its
/// message_id (and from) can be recovered; what cannot be recovered is logged once.
@Suite struct InboundRecoveryTests {
    func parse(_ json: String) throws -> InboundMessage? {
        try InboundMessage.parse(stanza: InboundMessageTests.message(json))
    }

    @Test func upstreamWithLoneSurrogatesDecodesThemAsReplacementCharacters() throws {
        let parsed = try parse(#"{"message_id":"u-\ud83d","from":"dev-1","category":"c","data":{"text":"a\ud83d b \udc00 \ud83d\ude00"}}"#)
        guard case .upstream(let upstream)? = parsed else { Issue.record("\(String(describing: parsed))"); return }
        #expect(upstream.messageID == "u-\u{FFFD}")
        #expect(upstream.data == .object(["text": .string("a\u{FFFD} b \u{FFFD} 😀")]))
        // Lone surrogates in data are not flagged; in the message_id they are (the id is kept as written).
        #expect(upstream.messageIDLiteral == #""u-\ud83d""#)
        #expect(upstream.decodeError?.hasPrefix("message_id: holds unpaired UTF-16 surrogate escapes") == true)
    }

    @Test func receiptWithLoneSurrogatesDecodes() throws {
        let parsed = try parse(#"{"message_type":"receipt","message_id":"dr2:m-1","from":"gcm.googleapis.com","data":{"original_message_id":"m-1","message_status":"MESSAGE_SENT_TO_DEVICE","device_registration_id":"tok\udc00"}}"#)
        guard case .receipt(let receipt)? = parsed else { Issue.record("\(String(describing: parsed))"); return }
        #expect(receipt.messageID == "dr2:m-1")
        #expect(receipt.deviceRegistrationID == "tok\u{FFFD}")
    }

    @Test func numberNoDoubleHoldsIsReadAsNullAndNamed() throws {
        let json = #"{"message_id":"u-2","from":"dev","data":{"n":1e400,"t":"x"}}"#
        guard case .upstream(let upstream)? = try parse(json) else { Issue.record("not an upstream"); return }
        #expect(upstream.data == .object(["n": .null, "t": .string("x")]))
        #expect(upstream.decodeError?.contains("data.n") == true)
        #expect(upstream.decodeError?.contains("1e400") == true)
        #expect(upstream.raw == json)
    }

    @Test func unparseableUpstreamIsRecoveredByMessageIDAndFrom() throws {
        let json = #"{"message_id":"u-3","from":"dev-3","category":"com.x","data":{"k":"v"}"#  // truncated
        guard case .upstream(let upstream)? = try parse(json) else { Issue.record("not an upstream"); return }
        #expect(upstream.messageID == "u-3")
        #expect(upstream.from == "dev-3")
        #expect(upstream.category == "com.x")
        #expect(upstream.data == .null)
        #expect(upstream.decodeError?.hasPrefix("gcm: the payload is not valid JSON") == true)
        #expect(upstream.raw == json)
    }

    @Test func unparseableReceiptIsRecoveredAndAckGoesToItsFromOrTheDefault() throws {
        let json = #"{"message_type":"receipt","message_id":"dr2:m-4","data":{"original_message_id":"m-4"},"x":tru}"#
        guard case .receipt(let receipt)? = try parse(json) else { Issue.record("not a receipt"); return }
        #expect(receipt.messageID == "dr2:m-4")
        #expect(receipt.from == "gcm.googleapis.com")
        #expect(receipt.originalMessageID == "m-4")
        #expect(receipt.decodeError != nil)
        #expect(receipt.raw == json)
    }

    @Test func whatCannotBeRecoveredThrowsWithWhatWasFound() {
        func thrown(_ json: String) -> InboundParseError? {
            do { _ = try parse(json); return nil } catch let error as InboundParseError { return error } catch { return nil }
        }
        // An upstream without from cannot be ACKed: its ACK goes to its from.
        let noFrom = thrown(#"{"message_id":"u-5","data":{"n":tru}"#)
        #expect(noFrom?.messageID == "u-5")
        // Nothing recoverable: told apart by digest.
        let a = thrown("garbage one"), b = thrown("garbage two")
        #expect(a?.messageID == nil)
        #expect(a != nil && b != nil && a?.payloadDigest != b?.payloadDigest)
        #expect(thrown(#"{"message_type":"shiny","message_id":"m-1","x":}"#)?.messageID == "m-1")
    }

    @Test func unparseableAcksNacksAndControlStillResolve() throws {
        #expect(try parse(#"{"message_type":"ack","message_id":"m-1","from":"tok","x":}"#) == .ack(.init(messageID: "m-1", from: "tok")))
        #expect(try parse(#"{"message_type":"nack","message_id":"m-2","error":"BAD_REGISTRATION","x":}"#)
                == .nack(.init(messageID: "m-2", error: "BAD_REGISTRATION")))
        #expect(try parse(#"{"message_type":"control","control_type":"CONNECTION_DRAINING","x":}"#) == .control(controlType: "CONNECTION_DRAINING"))
    }

    @Test func unreadableMessagesAreLoggedOncePerIDWithBoundedMemory() {
        var log = UnreadableMessageLog(capacity: 2)
        let one = InboundParseError(field: "gcm", rule: "r", messageID: "u-1")
        let two = InboundParseError(field: "gcm", rule: "r", messageID: nil, payloadDigest: 7)
        let logged = [log.record(one), log.record(one), log.record(one), log.record(two), log.record(two)]
        #expect(logged == [true, false, false, true, false])
        #expect(log.total == 5)
        #expect(log.repeats == 3)
        // A third key evicts the oldest (memory stays at 2 keys); the evicted one logs once more.
        let third = log.record(InboundParseError(field: "gcm", rule: "r", messageID: "u-3"))
        let oneAgain = log.record(one)
        #expect(third && oneAgain)
    }
}

/// A recovered upstream message or receipt goes through the dispatcher like any other: handed over once, ACKed
/// at every delivery.
@Suite struct DispatcherRecoveredInboundTests {
    @Test func recoveredUpstreamIsHandedOverOnceAndAckedEveryTime() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        let stanza = InboundMessageTests.message(#"{"message_id":"u-9","from":"dev-9","data":{"n":1e400"#)
        let message = try #require(try InboundMessage.parse(stanza: stanza))
        h.receive(message, on: 1)
        h.receive(message, on: 1)  // CCS redelivers
        let handedOver = h.events.filter { if case .upstream = $0 { true } else { false } }
        #expect(handedOver.count == 1)
        guard case .upstream(let upstream)? = handedOver.first else { return }
        #expect(upstream.decodeError != nil)
        #expect(h.acks.count == 2)
        #expect(h.acks.allSatisfy { $0 == (1, "dev-9", "u-9") })
    }

    @Test func recoveredReceiptIsAckedToTheDefaultFrom() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        let stanza = InboundMessageTests.message(#"{"message_type":"receipt","message_id":"dr2:m-1","data":{"a":"\ud83d"},"bad"}"#)
        let message = try #require(try InboundMessage.parse(stanza: stanza))
        h.receive(message, on: 1)
        #expect(h.acks.count == 1)
        #expect(h.acks.first.map { $0 == (1, "gcm.googleapis.com", "dr2:m-1") } == true)
        #expect(h.events.filter { if case .receipt = $0 { true } else { false } }.count == 1)
    }
}

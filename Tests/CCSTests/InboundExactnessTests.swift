import Foundation
import Testing
import XMLStream
@testable import CCS

/// Inbound messages keep what the server wrote (issue 7 items 4 and 7): message_ids that read alike after
/// the lone-surrogate repair stay distinct and are ACKed as written; a non-string `message_type` does not make
/// a message poison; device-group counts are never replaced by what an integer type can hold.
@Suite struct InboundExactnessTests {
    func parse(_ json: String) throws -> InboundMessage? {
        try InboundMessage.parse(stanza: InboundMessageTests.message(json))
    }

    // MARK: Lone surrogates in message_id

    /// Four distinct upstream messages whose ids read as `s-U+FFFD`, and a redelivery of the first: each is
    /// handed over once, and every ACK carries the message_id exactly as the server wrote it.
    @Test func messageIDsDifferingOnlyInLoneSurrogatesAreHandedOverEachAndAckedAsWritten() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        let literals = [#""s-\ud800""#, #""s-\ud801""#, #""s-\udfff""#, #""s-\ufffd""#, #""s-\ud800""#]
        for literal in literals {
            let message = try #require(try parse(#"{"message_id":\#(literal),"from":"dev-1","data":{"k":"v"}}"#))
            h.receive(message, on: 1)
        }
        let upstream = h.events.filter { if case .upstream = $0 { true } else { false } }
        #expect(upstream.count == 4, "\(h.transcript)")
        #expect(h.ackStanzas.count == 5)
        // The JSON is XML-escaped text: quotes stay as they are in text content. `\ufffd` is no lone
        // surrogate: its id is U+FFFD itself, written as the character.
        let written = literals.map { $0 == #""s-\ufffd""# ? "\"s-\u{FFFD}\"" : $0 }
        for (stanza, literal) in zip(h.ackStanzas, written) {
            #expect(stanza.contains(#""message_id":\#(literal),"#), "\(stanza)")
        }
        // The durable store remembers the same distinct keys.
        let handedOver = h.requests.compactMap(\.handedOverMessageID)
        #expect(Set(handedOver).count == 4)
    }

    @Test func loneSurrogateMessageIDIsNamedInDecodeError() throws {
        guard case .upstream(let upstream)? = try parse(#"{"message_id":"s-\udc00","from":"dev","data":{}}"#) else {
            Issue.record("not an upstream"); return
        }
        #expect(upstream.messageID == "s-\u{FFFD}")
        #expect(upstream.decodeError?.contains(#""s-\udc00""#) == true)
        guard case .receipt(let receipt)? = try parse(#"{"message_type":"receipt","message_id":"dr2:\ud83d","from":"gcm.googleapis.com","data":{}}"#) else {
            Issue.record("not a receipt"); return
        }
        #expect(receipt.decodeError?.contains(#""dr2:\ud83d""#) == true)
        // A plain U+FFFD, written as an escape or as the character, needs no repair and is not flagged.
        guard case .upstream(let plain)? = try parse(#"{"message_id":"s-\ufffd","from":"dev","data":{}}"#) else {
            Issue.record("not an upstream"); return
        }
        #expect(plain.decodeError == nil)
    }

    /// Also when the text does not parse at all and the id is recovered by the token scan.
    @Test func loneSurrogateMessageIDsStayDistinctInBrokenJSON() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        for literal in [#""b-\ud800""#, #""b-\udbff""#] {
            let message = try #require(try parse(#"{"message_id":\#(literal),"from":"dev-1","data":{"k":bare}}"#))
            h.receive(message, on: 1)
        }
        #expect(h.events.filter { if case .upstream = $0 { true } else { false } }.count == 2)
        #expect(h.ackStanzas.map { $0.contains(#""message_id":"b-\ud800""#) } == [true, false])
        #expect(h.ackStanzas.map { $0.contains(#""message_id":"b-\udbff""#) } == [false, true])
    }

    /// Keys never collide: an ordinary id that looks like a key of a literal id gets another one.
    @Test func dedupeKeysAreDistinctAndAckWritesOnlyWellFormedLiterals() {
        let literal = UpstreamMessageID(text: "s-\u{FFFD}", literal: #""s-\ud800""#)
        let lookalike = UpstreamMessageID(text: "\u{FFFD}" + #""s-\ud800""#)
        let plain = UpstreamMessageID(text: "s-\u{FFFD}")
        #expect(Set([literal.key, lookalike.key, plain.key]).count == 3)
        #expect(UpstreamMessageID(text: "m-1").key == "m-1")
        #expect(literal.jsonValueText() == #""s-\ud800""#)
        // Not one well-formed string literal: the decoded text is written instead.
        for broken in [#""s-\ud800"#, #""a","b""#, #"s-\ud800"#, "\"a\nb\""] {
            #expect(UpstreamMessageID(text: "t", literal: broken).jsonValueText() == #""t""#, "\(broken)")
        }
    }

    // MARK: Non-string message_type

    @Test(arguments: [("null", "null"), ("5", "5"), ("false", "false"), ("[\"ack\"]", "an array"), ("{\"a\":1}", "an object"), ("-1e400", "-1e400")])
    func nonStringMessageTypeIsAnUpstreamMessageNamingIt(written: String, described: String) throws {
        for tail in ["", " garbage"] {
            let json = #"{"category":"c","data":{"k":"v"},"message_id":"q-1","from":"d1","message_type":\#(written)}"# + tail
            guard case .upstream(let upstream)? = try parse(json) else { Issue.record("not an upstream: \(json)"); continue }
            #expect(upstream.messageID == "q-1")
            #expect(upstream.from == "d1")
            #expect(upstream.decodeError?.contains("message_type: must be a string (got \(described))") == true, "\(upstream.decodeError ?? "nil")")
            #expect(upstream.raw == json)
            if tail.isEmpty, written != "-1e400" { #expect(upstream.data == .object(["k": .string("v")])) }
        }
    }

    @Test func nonStringMessageTypeWithoutFromIsUnreadableButNamesItsMessageID() throws {
        for json in [#"{"message_id":"q-2","message_type":null}"#, #"{"message_id":"q-2","message_type":7} x"#] {
            #expect(performing: { _ = try parse(json) }, throws: { error in
                (error as? InboundParseError)?.messageID == "q-2"
            })
        }
    }

    // MARK: Device-group counts

    /// A nack whose `success` is beyond Int64 did not reach every-member-failed: it is retried, not final.
    @Test func groupNackWithSuccessBeyondInt64IsNotEveryMemberFailed() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        h.accept("g-1", to: "group-key")
        let json = #"{"message_type":"nack","message_id":"g-1","from":"group-key","error":"SERVICE_UNAVAILABLE","success":18446744073709551616,"failure":1,"failed_registration_ids":["t1"]}"#
        h.receive(try #require(try parse(json)), on: 1)
        #expect(h.finalEvents(for: "g-1").isEmpty, "\(h.events)")
    }

    /// `success` 0 written as `-0`, `0.0` or `0e3` is exactly zero: every member failed, final.
    @Test(arguments: ["-0", "0.0", "0e3", "0"])
    func groupNackWithExactZeroSuccessIsFinal(success: String) throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        h.accept("g-2", to: "group-key")
        let json = #"{"message_type":"nack","message_id":"g-2","from":"group-key","error":"SERVICE_UNAVAILABLE","success":\#(success),"failed_registration_ids":["t1",5]}"#
        h.receive(try #require(try parse(json)), on: 1)
        #expect(h.finalEvents(for: "g-2").count == 1, "\(h.events)")
    }

    /// `1e-400` reads as 0 in a Double but is not zero: not every member failed.
    @Test func groupNackWithTinySuccessIsNotEveryMemberFailed() throws {
        var h = DispatcherTests.Harness()
        h.startReady()
        h.accept("g-3", to: "group-key")
        let json = #"{"message_type":"nack","message_id":"g-3","from":"group-key","error":"SERVICE_UNAVAILABLE","success":1e-400,"failed_registration_ids":["t1"]}"#
        h.receive(try #require(try parse(json)), on: 1)
        #expect(h.finalEvents(for: "g-3").isEmpty, "\(h.events)")
    }

    @Test func exactIntegerOfNumberText() {
        #expect(JSONValue.exactInteger(ofNumberText: "-0") == 0)
        #expect(JSONValue.exactInteger(ofNumberText: "1E2") == 100)
        #expect(JSONValue.exactInteger(ofNumberText: "2.50e1") == 25)
        #expect(JSONValue.exactInteger(ofNumberText: "2.5") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "1e-400") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "9223372036854775807") == Int64.max)
        #expect(JSONValue.exactInteger(ofNumberText: "-9223372036854775808") == Int64.min)
        #expect(JSONValue.exactInteger(ofNumberText: "9223372036854775808") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "18446744073709551617") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "1e400") == nil)
        #expect(JSONValue.exactInteger(ofNumberText: "0.000e99999999999999999999") == 0)
        #expect(JSONValue.exactInteger(ofNumberText: "1x") == nil)
    }
}

@testable import CCS
import Foundation
import Store
import Testing
@testable import Daemon

/// The record's in-place stanza and the events kept as pieces against the general writers, on
/// random strings full of markup, quotes, controls, non-ASCII and non-BMP characters, and long message_ids.
@Suite struct StanzaAndEventPiecesFuzzTests {
    static let alphabet: [String] = ["a", "Z", "0", "<", ">", "&", "\"", "'", "\\", "/", "\n", "\r", "\t", "\u{01}",
                                     "\u{1F}", "\u{7F}", "é", "€", "\u{FFFE}", "\u{FFFF}", "\u{F000}", "\u{FFFD}",
                                     "😀", "𝄞", "\u{2028}", " ", "]]>", "&amp;"]

    static func randomText(_ rng: inout SplitMix64, maxCount: Int, plainBias: Int) -> String {
        let count = Int.random(in: 0...maxCount, using: &rng)
        var text = ""
        for _ in 0..<count {
            if Int.random(in: 0..<100, using: &rng) < plainBias {
                text += "x"
            } else {
                text += alphabet.randomElement(using: &rng)!
            }
        }
        return text
    }

    @Test func recordStanzaMatchesTheAppendedStanza() throws {
        var rng = SplitMix64(seed: 10)
        for round in 0..<20_000 {
            let idMax = round % 10 == 0 ? 3000 : 40
            let id = Self.randomText(&rng, maxCount: idMax, plainBias: Int.random(in: 0...100, using: &rng))
            let value = Self.randomText(&rng, maxCount: 200, plainBias: Int.random(in: 0...100, using: &rng))
            var object = "{\"to\":\"tok\",\"message_id\":"
            JSONValue.writeString(id, to: &object)
            object += ",\"data\":{\"k\":"
            JSONValue.writeString(value, to: &object)
            object += "}}"
            let json = round % 7 == 0 ? id + value : object  // raw text too, controls included
            let record = MessageRecord(messageID: id, jsonUTF8: Array(json.utf8), to: "tok", rateKey: "tok",
                                       acceptedAt: 1, acceptedAtUnixMillis: 1, timeToLive: 5)
            var idCopy = id
            let expected = idCopy.withUTF8 { idBytes in
                Array(json.utf8).withUnsafeBufferPointer { CCSStanza.appendedDownstreamUTF8(id: idBytes, json: $0) }
            }
            #expect(record.stanza == expected, "round \(round): \(id.debugDescription) \(json.debugDescription)")
            #expect(record.withStanza { Array($0) } == expected)
            #expect(record.messageID == id && record.json == json)
            // A copy shares the storage and reads the same bytes.
            let copy = record
            #expect(copy.stanza == expected)
        }
    }

    @Test func eventPiecesMatchTheGeneralWriter() throws {
        var rng = SplitMix64(seed: 11)
        for round in 0..<20_000 {
            let id = Self.randomText(&rng, maxCount: round % 10 == 0 ? 2000 : 30, plainBias: Int.random(in: 50...100, using: &rng))
            let to = Self.randomText(&rng, maxCount: 30, plainBias: Int.random(in: 50...100, using: &rng))
            for event in [DispatcherEvent.accepted(messageID: id), .acked(messageID: id, to: to, canonicalRegistrationID: nil, group: nil)] {
                var general: [UInt8] = []
                event.appendJSONObject(to: &general)
                let text = event.plainText() ?? EventText(String(decoding: general, as: UTF8.self))
                #expect(Array(text.string.utf8) == general, "\(round) \(id.debugDescription) \(to.debugDescription)")
                #expect(text.utf8Count == general.count)
                let seq = Int64.random(in: 0...Int64.max, using: &rng)
                let plainLine = CCSDaemon.eventLine(JournaledEvent(seq: seq, timeUnixMillis: 1_764_570_000_123, text: text))
                let generalLine = CCSDaemon.eventLine(JournaledEvent(seq: seq, timeUnixMillis: 1_764_570_000_123,
                                                                     line: String(decoding: general, as: UTF8.self)))
                #expect(plainLine == generalLine)
                let parsed = try JSONValue.parse(String(plainLine.dropLast()))
                guard case .object(let members) = parsed else { Issue.record("not an object"); continue }
                #expect(members["message_id"] == .string(id))
            }
        }
    }
}

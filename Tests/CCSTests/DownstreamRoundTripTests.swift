import CCS
import Foundation
import Testing
import XMLStream

/// Seeded so that failures reproduce from the seed.
typealias SeededGenerator = SplitMix64

/// Random valid downstream messages (within the ccs-protocol.md §3 rules).
struct MessageGenerator {
    var rng: SeededGenerator

    static let tokenAlphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:")
    static let topicAlphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~%")
    /// Text pieces that stress the JSON writer and parser: quotes, backslashes, controls, XML specials, non-BMP.
    static let textPieces = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\r", "\u{0}", "\u{01}", "\u{1F}", "\u{7F}", "<", "&", ">", "]]>",
                             "é", "ß", "مباراة", "⚽", "🇵🇹", "😀", "\u{2028}", "{", "}", "[", ":", ","]

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    mutating func string(from alphabet: [Character], length: ClosedRange<Int>) -> String {
        String((0..<Int.random(in: length, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
    }

    mutating func text(maxPieces: Int = 8) -> String {
        (0..<Int.random(in: 0...maxPieces, using: &rng)).map { _ in Self.textPieces.randomElement(using: &rng)! }.joined()
    }

    mutating func topic() -> String { string(from: Self.topicAlphabet, length: 1...20) }

    mutating func condition() -> String {
        let term: (inout MessageGenerator) -> String = { g in "'\(g.topic())' in topics" }
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return term(&self)
        case 1: return "\(term(&self)) && \(term(&self))"
        case 2: return "\(term(&self)) || (\(term(&self)) && \(term(&self)))"
        case 3: return "(\(term(&self))||\(term(&self)))&&\(term(&self))"
        default: return "( \(term(&self)) )"
        }
    }

    mutating func dataKey() -> String {
        while true {
            let key = text(maxPieces: 4)
            if key != "from", key != "message_type", !key.hasPrefix("google"), !key.hasPrefix("gcm") { return key }
        }
    }

    mutating func notification() -> [String: JSONValue] {
        var n: [String: JSONValue] = [:]
        for key in DownstreamMessage.notificationKeys where chance(30) {
            switch key {
            case "color":
                n[key] = .string("#" + string(from: Array("0123456789abcdefABCDEF"), length: 6...6))
            case "badge":
                n[key] = chance(50) ? .string(String(Int.random(in: 0...99, using: &rng))) : .int(Int64.random(in: 0...99, using: &rng))
            case "body_loc_args", "title_loc_args":
                let args = (0..<Int.random(in: 0...3, using: &rng)).map { _ in JSONValue.string(text(maxPieces: 3)) }
                n[key] = chance(50) ? .array(args) : .string(JSONValue.array(args).serialized())
            default:
                n[key] = .string(text())
            }
        }
        return n
    }

    mutating func message() -> DownstreamMessage {
        let target: DownstreamMessage.Target
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: target = .token(string(from: Self.tokenAlphabet, length: 1...180))
        case 1: target = .topic(topic())
        default: target = .condition(condition())
        }
        var m = DownstreamMessage(target: target)
        if chance(70) { m.messageID = "m-" + String(text().unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }) }
        if chance(30) { m.collapseKey = text() }
        if chance(30) { m.priority = chance(50) ? .high : .normal }
        if chance(30) { m.contentAvailable = chance(50) }
        if chance(30) { m.mutableContent = chance(50) }
        if chance(40) { m.timeToLive = chance(20) ? 0 : Int.random(in: 0...2_419_200, using: &rng) }
        if chance(30) { m.dryRun = chance(50) }
        if chance(30) { m.deliveryReceiptRequested = chance(50) }
        if chance(60) {
            var data: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &rng) { data[dataKey()] = text() }
            m.data = data
        }
        if chance(50) { m.notification = notification() }
        return m
    }
}

@Suite("Downstream round trip")
struct DownstreamRoundTripTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// model → JSON → parse → model is the identity for any valid message, through both writers.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomValidMessagesSurviveTheRoundTrip(seed: UInt64) throws {
        var generator = MessageGenerator(rng: SeededGenerator(seed: seed))
        for index in 0..<500 {
            let message = generator.message()
            do {
                try message.validate()
            } catch {
                Issue.record("seed \(seed) #\(index): generated message is invalid: \(error)\n\(message.jsonString())")
                continue
            }
            let text = message.jsonString()
            let viaString = DownstreamIntake.parse(line: text, now: Self.now)
            #expect(try viaString.get() == message, "seed \(seed) #\(index): \(text)")
            let viaValue = DownstreamIntake.parse(line: message.jsonValue().serialized(), now: Self.now)
            #expect(try viaValue.get() == message, "seed \(seed) #\(index)")
            // The two writers agree, and jsonString is itself stable.
            #expect(try JSONValue.parse(text) == message.jsonValue())
            #expect(try viaString.get().jsonString() == text)
            // The size rule measures what is written.
            let written = (message.data.map { JSONValue.object($0.mapValues { .string($0) }).serialized().utf8.count } ?? 0)
                + (message.notification.map { JSONValue.object($0).serialized().utf8.count } ?? 0)
            #expect(message.payloadByteCount == written)
        }
    }

    /// model → JSON → stanza → parse → model: the XML-escaped JSON inside `<gcm>` comes back unchanged,
    /// explicit time_to_live 0 included, and the stanza id equals the message_id (ccs-protocol.md §2).
    @Test(arguments: [5, 6] as [UInt64])
    func randomValidMessagesSurviveTheStanzaRoundTrip(seed: UInt64) throws {
        var generator = MessageGenerator(rng: SeededGenerator(seed: seed))
        let parser = XMLStreamParser()
        var stanzas: [XMLElement] = []
        try parser.feed(XMLWriter.streamHeader(to: "gcm.googleapis.com")) { if case .stanza(let s) = $0 { stanzas.append(s) } }
        for index in 0..<300 {
            var message = generator.message()
            if index % 7 == 0 { message.timeToLive = 0 }
            message = message.withMessageID(message.messageID ?? "gen-\(seed)-\(index)")
            let stanza = CCSStanza.downstream(messageID: message.messageID!, json: message.jsonString())
            stanzas.removeAll()
            // Split the stanza at a random point, as a network read would.
            let bytes = Array(stanza.utf8)
            let cut = Int.random(in: 0...bytes.count, using: &generator.rng)
            try parser.feed(Array(bytes[..<cut])) { if case .stanza(let s) = $0 { stanzas.append(s) } }
            try parser.feed(Array(bytes[cut...])) { if case .stanza(let s) = $0 { stanzas.append(s) } }
            let parsed = try #require(stanzas.first, "seed \(seed) #\(index): no stanza from \(stanza)")
            #expect(parsed.attribute("id") == message.messageID)
            let gcm = try #require(parsed.child("gcm", namespace: XMLNamespace.gcm))
            let back = try DownstreamIntake.parse(line: gcm.text, now: Self.now).get()
            #expect(back == message, "seed \(seed) #\(index)")
            if message.timeToLive == 0 { #expect(gcm.text.contains("\"time_to_live\":0")) }
        }
    }
}

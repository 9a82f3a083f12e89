import CCS
import Testing

/// `shorteningTokens(in:)`: tokens quoted in a peer's free text are shortened, the rest is kept.
@Suite struct PeerTextTokenTests {
    static let token = "dQw4w9WgXcQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx_" + String(repeating: "a", count: 100)

    @Test func aQuotedTokenIsShortenedTheRestKept() {
        let text = "Invalid token on 'to' field: \(Self.token)"
        #expect(shorteningTokens(in: text) == "Invalid token on 'to' field: dQw4w9Wg…(\(Self.token.count))")
    }

    @Test func shortRunsAndOtherTextAreKept() {
        for text in ["", "BAD_REGISTRATION", "stream error (conflict): replaced by new connection",
                     "message_id m-1234567890 on connection 3", String(repeating: "x", count: 31)] {
            #expect(shorteningTokens(in: text) == text)
        }
        #expect(shorteningTokens(in: String(repeating: "x", count: 32)) == "xxxxxxxx…(32)")
    }

    /// A nack's error_description is shortened where it is parsed: logs and the nacked event get the same.
    @Test func aNackDescriptionIsShortened() {
        let nack = InboundMessage.Nack(messageID: "m", error: .badRegistration, errorDescription: "bad \(Self.token)", group: nil)
        #expect(nack.errorDescription == "bad dQw4w9Wg…(\(Self.token.count))")
    }
}

import Testing
@testable import CCS

/// `EventText.withUTF8`: the bytes a durable store journals and binds are the text's, whichever way it is kept.
@Suite struct EventTextTests {
    @Test func withUTF8GivesTheBytesOfTheTextForEveryKind() throws {
        let long = "m-" + String(repeating: "0123456789", count: 200)  // past any stack buffer
        let texts: [(EventText, String)] = [
            (try #require(EventText.accepted(messageID: "m-1")), #"{"event":"accepted","message_id":"m-1"}"#),
            (try #require(EventText.acked(messageID: "m-1", to: "tok")), #"{"event":"acked","message_id":"m-1","to":"tok"}"#),
            (try #require(EventText.acked(messageID: long, to: long)), #"{"event":"acked","message_id":"\#(long)","to":"\#(long)"}"#),
            (EventText(#"{"event":"nacked","error":"é😀"}"#), #"{"event":"nacked","error":"é😀"}"#),
            (EventText("short"), "short"),  // a small string, kept inline
            (EventText(""), ""),
        ]
        for (text, expected) in texts {
            #expect(text.withUTF8 { Array($0) } == Array(expected.utf8))
            #expect(text.withUTF8 { $0.count } == text.utf8Count)
        }
    }
}

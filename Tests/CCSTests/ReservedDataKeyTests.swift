import Testing
@testable import CCS

/// The common-shape reader tests `data` keys for the reserved ones on their bytes
/// (`isReservedDataKey(ascii:)`); the rule is `isReservedDataKey(_:)`. They agree on every ASCII key.
@Suite struct ReservedDataKeyTests {
    static let edges = ["", "f", "from", "From", "fro", "froms", "from ", " from", "message_type", "message_typ", "message_types",
                        "MESSAGE_TYPE", "g", "gc", "gcm", "gcm.", "gcmx", "GCM", "gcM", "google", "googl", "google.c2dm",
                        "googlex", "Google", "go", "data", "score", "text", "gcm\r\n", "\r\ngcm", "google\r", "from\r\n"]

    static func agree(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { DownstreamIntake.isReservedDataKey(ascii: $0) } == DownstreamIntake.isReservedDataKey(key)
    }

    @Test func edgesAgree() {
        for key in Self.edges { #expect(Self.agree(key), "\(key.debugDescription)") }
    }

    /// Random ASCII keys, half of them starting with a reserved name or a piece of one.
    @Test func randomKeysAgree() {
        var generator = SystemRandomNumberGenerator()
        let starts = ["", "from", "message_type", "gcm", "google", "go", "gc", "fr"]
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...6, using: &generator)
            let tail = String(decoding: (0..<length).map { _ in UInt8.random(in: 0...0x7F, using: &generator) }, as: UTF8.self)
            let key = starts.randomElement(using: &generator)! + tail
            #expect(Self.agree(key), "\(key.debugDescription)")
        }
    }
}

import CCS
import Foundation
import Testing
import XMLStream
import XMPP
@testable import Daemon

/// The resource limit keys (docs/limits.md): parsed with their ranges, errors naming the key, the rule and
/// the value, each placed in the reload plan, and carried to where they bound.
@Suite struct LimitConfigurationTests {
    func load(_ json: String) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        try configuration.apply(fileContents: Data(json.utf8), path: "test.json")
        return configuration
    }

    @Test func defaults() {
        let c = Configuration()
        #expect(c.maxStanzaBytes == 1_048_576)
        #expect(c.maxStanzaDepth == 32)
        #expect(c.maxStanzaAttributes == 64)
        #expect(c.maxLineBytes == 65_536)
        #expect(c.maxQueued == 20_000)
        #expect(c.connections == 1)
    }

    @Test func valuesApplyAndReachTheParserLimits() throws {
        let c = try load(#"{"max_stanza_bytes":2048,"max_stanza_depth":8,"max_stanza_attributes":16,"max_line_bytes":4096,"max_queued":500}"#)
        #expect(c.maxLineBytes == 4096)
        #expect(c.maxQueued == 500)
        let client = CCSDaemon.clientConfiguration(for: Endpoint(host: "h", port: 1), c)
        #expect(client.limits == XMLStreamLimits(maxStanzaBytes: 2048, maxDepth: 8, maxAttributes: 16))
    }

    @Test(arguments: [
        ("max_stanza_depth", "1", "must be an integer from 2 to 256, got 1"),
        ("max_stanza_depth", "257", "must be an integer from 2 to 256, got 257"),
        ("max_stanza_attributes", "7", "must be an integer from 8 to 1024, got 7"),
        ("max_stanza_attributes", "\"64\"", "must be an integer from 8 to 1024, got \"64\""),
        ("max_line_bytes", "100", "must be an integer from 1024 to 16777216, got 100"),
        ("max_queued", "0", "must be an integer from 1 to 10000000, got 0"),
        ("max_queued", "2.5", "must be an integer from 1 to 10000000, got 2.5"),
        ("connections", "1001", "must be an integer from 1 to 1000, got 1001"),
        ("max_stanza_bytes", "100", "must be an integer from 1024 to 16777216, got 100"),
    ])
    func outOfRangeNamesTheKeyTheRuleAndTheValue(key: String, value: String, rule: String) {
        #expect(throws: ConfigurationError(field: key, rule: rule)) { try load("{\"\(key)\":\(value)}") }
    }

    @Test func stanzaLimitsApplyToNewConnectionsQueueAtOnceLineLengthNeedsARestart() throws {
        var old = Configuration()
        old.senderID = "1"
        old.serverKey = Secret("k")
        var new = old
        new.maxStanzaDepth = 16
        new.maxStanzaAttributes = 128
        new.maxQueued = 100
        let plan = try ReloadPlan(from: old, to: new)
        #expect(plan.changes == ["max_queued 20000→100", "max_stanza_depth 32→16 (new connections)",
                                 "max_stanza_attributes 64→128 (new connections)"])
        var longer = old
        longer.maxLineBytes = 1 << 20
        #expect(throws: ConfigurationError.self) { try ReloadPlan(from: old, to: longer) }
        do { _ = try ReloadPlan(from: old, to: longer) } catch { #expect(error.field == "max_line_bytes") }
    }
}

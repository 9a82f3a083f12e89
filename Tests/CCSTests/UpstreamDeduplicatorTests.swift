import Testing
@testable import CCS

/// Redelivered upstream messages are recognised within the window, with memory bounded (ccs-protocol.md §3).
@Suite struct UpstreamDeduplicatorTests {
    @Test func duplicatesWithinTheWindowAreRecognised() {
        var dedupe = UpstreamDeduplicator(window: 10)
        #expect(dedupe.firstSighting(of: "u-1", now: 0))
        #expect(!dedupe.firstSighting(of: "u-1", now: 9.9))
        #expect(dedupe.firstSighting(of: "u-1", now: 10.1))  // the first sighting aged out
    }

    @Test func entryCountIsBounded() {
        var dedupe = UpstreamDeduplicator(window: 1000, capacity: 3)
        for i in 0..<10 { #expect(dedupe.firstSighting(of: "u-\(i)", now: 0)) }
        #expect(dedupe.count == 3)
        #expect(!dedupe.firstSighting(of: "u-9", now: 0))
        #expect(dedupe.firstSighting(of: "u-0", now: 0))  // forgotten: the oldest went first
    }

    @Test func bytesAreBoundedForLongIDs() {
        var dedupe = UpstreamDeduplicator(window: 1000, capacity: 1_000_000, maxBytes: 10_000)
        let long = String(repeating: "x", count: 4000)
        for i in 0..<100 { _ = dedupe.firstSighting(of: long + "\(i)", now: 0) }
        #expect(dedupe.count <= 3)
        #expect(!dedupe.firstSighting(of: long + "99", now: 0))
    }
}

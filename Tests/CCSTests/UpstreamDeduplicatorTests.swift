import Testing
@testable import CCS

/// Redelivered upstream messages are recognised within the window, with memory bounded (ccs-protocol.md §3).
@Suite struct UpstreamDeduplicatorTests {
    @Test func duplicatesWithinTheWindowAreRecognised() {
        var dedupe = UpstreamDeduplicator(window: 10)
        let first = dedupe.firstSighting(of: "u-1", now: 0)
        let again = dedupe.firstSighting(of: "u-1", now: 9.9)
        let later = dedupe.firstSighting(of: "u-1", now: 10.1)  // the first sighting aged out
        #expect(first && !again && later)
    }

    @Test func entryCountIsBounded() {
        var dedupe = UpstreamDeduplicator(window: 1000, capacity: 3)
        var fresh = 0
        for i in 0..<10 where dedupe.firstSighting(of: "u-\(i)", now: 0) { fresh += 1 }
        #expect(fresh == 10)
        #expect(dedupe.count == 3)
        let newest = dedupe.firstSighting(of: "u-9", now: 0)
        let oldest = dedupe.firstSighting(of: "u-0", now: 0)  // forgotten: the oldest went first
        #expect(!newest && oldest)
    }

    @Test func bytesAreBoundedForLongIDs() {
        var dedupe = UpstreamDeduplicator(window: 1000, capacity: 1_000_000, maxBytes: 10_000)
        let long = String(repeating: "x", count: 4000)
        for i in 0..<100 { _ = dedupe.firstSighting(of: long + "\(i)", now: 0) }
        #expect(dedupe.count <= 3)
        let last = dedupe.firstSighting(of: long + "99", now: 0)
        #expect(!last)
    }
}

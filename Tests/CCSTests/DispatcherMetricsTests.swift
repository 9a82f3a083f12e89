import Testing
@testable import CCS

/// What the dispatcher counts for the service's metrics: outcomes, nacks by code and final/retry, and the
/// accept-to-ack latency (no sockets, no sleeps: the harness's clock).
@Suite struct DispatcherMetricsTests {
    typealias Harness = DispatcherTests.Harness

    @Test func nacksAreCountedByCodeAndFinality() {
        var h = Harness(maxAttempts: 2)
        h.startReady()
        h.accept("m-1")
        h.accept("m-2")
        h.nack("m-1", "INVALID_JSON", on: 1)           // permanent: final
        h.nack("m-2", "SERVICE_UNAVAILABLE", on: 1)    // transient: retried
        h.advance(to: 1000)                            // its backoff is over: sent again
        h.nack("m-2", "SERVICE_UNAVAILABLE", on: 1)    // attempt 2 of 2: final
        let counters = h.dispatcher.counters
        #expect(counters.accepted == 2)
        #expect(counters.nacksByCode["INVALID_JSON"] == .init(final: 1, retried: 0))
        #expect(counters.nacksByCode["SERVICE_UNAVAILABLE"] == .init(final: 1, retried: 1))
        // The tallies agree with the events journaled.
        let nacked = h.events.compactMap { event -> Bool? in
            if case .nacked(_, _, _, let final, _, _) = event { final } else { nil }
        }
        #expect(nacked.filter { $0 }.count == counters.nacked)
        #expect(nacked.filter { !$0 }.count == counters.retried)
    }

    @Test func aServerInventingCodesCannotGrowTheTally() {
        var h = Harness()
        h.startReady()
        for i in 0..<100 { h.accept("m-\(i)") }
        for i in 0..<100 { h.nack("m-\(i)", "MADE_UP_\(i)", on: 1) }  // unknown codes (retried)
        let tallies = h.dispatcher.counters.nacksByCode
        #expect(tallies.count == DispatcherCounters.maxNackCodes)
        #expect(tallies.values.reduce(0) { $0 + $1.final + $1.retried } == 100)
        let other = tallies[DispatcherCounters.otherNackCode]
        #expect((other?.final ?? 0) + (other?.retried ?? 0) == 100 - (DispatcherCounters.maxNackCodes - 1))
    }

    @Test func rejectionsAreCountedByRetryability() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.accept("m-1")  // a duplicate: not retryable
        h.dispatcher.storeUnavailable(reason: "disk full")
        h.accept("m-2")  // retryable
        #expect(h.dispatcher.counters.rejected == 2)
        #expect(h.dispatcher.counters.rejectedRetryable == 1)
    }

    @Test func ackLatencyIsObservedFromAcceptanceToAck() {
        var h = Harness()
        h.startReady()
        h.now = 10
        h.accept("m-1")
        h.accept("m-2")
        h.now = 10.3
        h.ack("m-1", on: 1)
        h.now = 12
        h.ack("m-2", on: 1)
        h.ack("m-2", on: 1)  // a second ack of the same message resolves nothing: not observed
        let latency = h.dispatcher.ackLatency
        #expect(latency.count == 2)
        #expect(abs(latency.sum - 2.3) < 1e-9)
        #expect(latency.cumulativeCounts[latency.bounds.firstIndex(of: 0.5)!] == 1)
        #expect(latency.cumulativeCounts[latency.bounds.firstIndex(of: 2.5)!] == 2)
    }
}

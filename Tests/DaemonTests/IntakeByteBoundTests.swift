import CCS
import Daemon
import Foundation
@testable import Store
import Testing

/// `max_queued_bytes` (docs/limits.md): intake pauses while the outstanding messages weigh that many bytes
/// (JSON text plus 1 KiB each), whatever their count, and resumes below half; nothing is lost or reordered.
@Suite struct IntakeByteBoundTests {
    /// A resume callback's calls, from the daemon's loop.
    final class Resumed: @unchecked Sendable {
        var count = 0
    }

    /// A daemon with `max_queued_bytes` 11,000 that took twenty messages of about 90 bytes of JSON (about
    /// 1,110 bytes each with the bookkeeping) in one batch and sent them all; the batch's resume callback
    /// counts into `resumed`. Message ids are `PREFIX-0` to `PREFIX-19`.
    static func twentySentAgainstABoundOf11000(prefix: String)
        -> (h: DaemonDriverTests.Harness, ids: [String], resumed: Resumed) {
        let h = DaemonDriverTests.Harness(store: .memory) { $0.maxQueuedBytes = 11_000 }
        h.startReady()
        let ids = (0..<20).map { "\(prefix)-\($0)" }
        let resumed = Resumed()
        let items: [CCSDaemon.IntakeItem] = ids.enumerated().map { index, id in
            let line = #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
            return .message(try! DownstreamIntake.parse(line: line, now: Date()).get(), line: index + 1)
        }
        h.daemon.submit(items) { resumed.count += 1 }
        #expect(h.settle { h.sentDownstream().count == 20 })
        return (h, ids, resumed)
    }

    /// Twenty messages of about 90 bytes of JSON (weighing about 1,110 bytes each) against a bound of 11,000
    /// bytes (the count bound, 20,000, is far away): the batch is taken, intake pauses; acks that leave more
    /// than half the weight outstanding do not resume it; the ack that brings it below half does. Every
    /// message is accepted and acked once, in input order.
    @Test func intakePausesAtTheByteBoundAndResumesBelowHalf() {
        let (h, ids, resumed) = Self.twentySentAgainstABoundOf11000(prefix: "bytes")
        #expect(resumed.count == 0, "intake resumed with about 22,000 bytes outstanding against a bound of 11,000")
        // Ten acked: about 11,000 bytes left, not below half of the bound.
        for id in ids.prefix(10) { h.ack(id) }
        #expect(h.settle { h.events("acked").count == 10 })
        h.spin()
        #expect(resumed.count == 0, "intake resumed above half of the bound")
        // Sixteen acked: about 4,400 bytes left, below half.
        for id in ids[10..<16] { h.ack(id) }
        #expect(h.settle { resumed.count == 1 })
        for id in ids[16...] { h.ack(id) }
        #expect(h.settle { h.events("acked").count == 20 })
        #expect(h.events("acked").compactMap { $0["message_id"]?.stringValue } == ids)
        #expect(h.events("accepted").compactMap { $0["message_id"]?.stringValue } == ids)
    }

    /// A reload that raises `max_queued_bytes` while intake is paused for bytes applies at once (docs/limits.md:
    /// "at once"): the outstanding messages now weigh far less than half the new bound, so intake resumes
    /// without waiting for any of them to end (here none ends: nothing is acked before the check).
    @Test func aReloadThatRaisesTheByteBoundResumesAPausedIntakeAtOnce() {
        let (h, ids, resumed) = Self.twentySentAgainstABoundOf11000(prefix: "raise")
        #expect(resumed.count == 0)
        var configuration = h.daemon.configuration
        configuration.maxQueuedBytes = 1 << 20
        #expect(h.daemon.reload(configuration) == .applied(changes: ["max_queued_bytes 11000→1048576"]))
        #expect(h.settle { resumed.count == 1 }, "intake stayed paused under a raised byte bound")
        for id in ids { h.ack(id) }
        #expect(h.settle { h.events("acked").count == 20 })
    }

    /// The same for a raise that comes from the default following `connections` (no `max_queued_bytes` set).
    @Test func aReloadThatRaisesTheDefaultByteBoundResumesAPausedIntakeAtOnce() {
        let (h, ids, resumed) = Self.twentySentAgainstABoundOf11000(prefix: "raise-default")
        #expect(resumed.count == 0)
        var configuration = h.daemon.configuration
        configuration.maxQueuedBytes = nil  // back to the default: 1 MiB
        _ = h.daemon.reload(configuration)
        #expect(h.settle { resumed.count == 1 }, "intake stayed paused under a raised byte bound")
        for id in ids { h.ack(id) }
        #expect(h.settle { h.events("acked").count == 20 })
    }

    /// The key: its range, its default from the connections and the window, and the reload plan.
    @Test func theKeyHasARangeAndADefaultFromTheWindows() throws {
        var c = Configuration()
        c.store = .memory
        #expect(c.effectiveMaxQueuedBytes == 1 << 20)
        c.connections = 1000
        #expect(c.effectiveMaxQueuedBytes == 1000 * 100 * 1024)
        // The SQLite store (the default) doubles it: a message also waits for its two commits.
        c.store = .sqlite
        #expect(c.effectiveMaxQueuedBytes == 2 * 1000 * 100 * 1024)
        c.connections = 1
        #expect(c.effectiveMaxQueuedBytes == 2 << 20)
        #expect(Configuration().effectiveMaxQueuedBytes == 2 << 20)
        try c.apply(fileContents: Data(#"{"max_queued_bytes":65536}"#.utf8), path: "test.json")
        #expect(c.effectiveMaxQueuedBytes == 65536)
        var refused = Configuration()
        #expect(throws: ConfigurationError(field: "max_queued_bytes", rule: "must be an integer from 65536 to 1073741824, got 1000")) {
            try refused.apply(fileContents: Data(#"{"max_queued_bytes":1000}"#.utf8), path: "test.json")
        }
    }

    /// SQLite's page cache follows the bound: a quarter of it, from 512 KiB (one connection) up to SQLite's
    /// own 2,000 KiB (many connections, whose acks update rows spread over many pages), and reaches the store.
    @Test func theStorePageCacheIsAQuarterOfTheBoundWithinLimits() throws {
        var c = Configuration()
        #expect(c.storePageCacheKiB == 512)  // 1 connection, SQLite: a 2 MiB bound
        #expect(c.storeConfiguration.pageCacheKiB == 512)
        c.maxQueuedBytes = 4 << 20
        #expect(c.storePageCacheKiB == 1024)
        c.maxQueuedBytes = nil
        c.connections = 1000
        #expect(c.storePageCacheKiB == 2000)
        c.connections = 4
        #expect(c.storePageCacheKiB == 512)
        let directory = NSTemporaryDirectory() + "ccsd-page-cache-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        c.stateDirectory = directory
        let store = try #require(try c.openStore() as? SQLiteMessageStore)
        defer { store.close() }
        #expect(try store.pragma("cache_size") == -512)
    }
}

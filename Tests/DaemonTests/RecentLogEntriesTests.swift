import Dispatch
import Foundation
import Testing
@testable import Daemon

/// The log's ring of recent warning and error lines (`recent_errors` of the service's status): which lines
/// it keeps, its bound, its order, and that concurrent loggers lose nothing within the bound.
@Suite struct RecentLogEntriesTests {
    @Test func keepsOnlyWarningsAndErrorsTheLogWrote() throws {
        let text = try LoggerFormatTests.capture(.plain, minimum: .info) { logger in
            logger.debug("d")
            logger.info("i")
            logger.warning("connection failed; backing off", ["connection": "1", "error": "refused"])
            logger.error("store write failed", ["error": "disk full"])
            #expect(logger.recentErrors.entries.map(\.message) == ["connection failed; backing off", "store write failed"])
            let first = logger.recentErrors.entries[0]
            #expect(first.level == .warning)
            #expect(first.fields == [.init(key: "connection", value: "1"), .init(key: "error", value: "refused")])
            #expect(first.time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil)
            #expect(logger.recentErrors.entries[1].level == .error)
        }
        #expect(text.contains("connection failed"))
        // Below the minimum: not written, so not kept.
        _ = try LoggerFormatTests.capture(.plain, minimum: .error) { logger in
            logger.warning("w")
            #expect(logger.recentErrors.entries.isEmpty)
        }
    }

    @Test func boundedOldestDroppedFirst() {
        let ring = RecentLogEntries(capacity: 3)
        for index in 1...7 { ring.append(.init(time: "t", level: .error, message: "m\(index)", fields: [])) }
        #expect(ring.entries.map(\.message) == ["m5", "m6", "m7"])
        let two = RecentLogEntries(capacity: 3)
        for index in 1...2 { two.append(.init(time: "t", level: .error, message: "m\(index)", fields: [])) }
        #expect(two.entries.map(\.message) == ["m1", "m2"])
    }

    @Test func concurrentLoggersKeepTheLastEntriesWhole() throws {
        _ = try LoggerFormatTests.capture(.plain) { logger in
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for index in 0..<200 { logger.warning("w", ["thread": "\(thread)", "index": "\(index)"]) }
            }
            let entries = logger.recentErrors.entries
            #expect(entries.count == 20)
            #expect(entries.allSatisfy { $0.message == "w" && $0.fields.count == 2 })
            // Each thread's entries in the ring are in the order it logged them.
            for thread in 0..<8 {
                let indices = entries.filter { $0.fields[0].value == "\(thread)" }.compactMap { Int($0.fields[1].value) }
                #expect(indices == indices.sorted())
            }
        }
    }
}

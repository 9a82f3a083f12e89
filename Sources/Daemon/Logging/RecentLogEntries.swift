import CCS

/// The last warning and error lines a `Logger` wrote, oldest first, for `GET /v1/status` (`recent_errors`)
/// and `ccsd status`. Bounded: at most `capacity` entries are kept, the oldest dropped first. Holds what
/// the log holds and nothing more (callers already shorten registration tokens and never log the key).
/// Thread-safe: any thread may log while another reads (`Locked`, which ThreadSanitizer sees).
public final class RecentLogEntries: Sendable {
    /// One log line: its time (RFC 3339, UTC, milliseconds), level, message and metadata in order.
    public struct Entry: Sendable, Equatable {
        public let time: String
        public let level: Logger.Level
        public let message: String
        public let fields: [Field]

        public struct Field: Sendable, Equatable {
            public let key: String
            public let value: String
        }
    }

    /// The most entries kept.
    public let capacity: Int
    private let state = Locked<(entries: [Entry], next: Int)>(([], 0))

    /// - Parameter capacity: the most entries kept (at least 1).
    public init(capacity: Int = 20) {
        self.capacity = max(1, capacity)
    }

    /// Keeps `entry`, dropping the oldest when full.
    public func append(_ entry: Entry) {
        state.withLock { state in
            if state.entries.count < capacity {
                state.entries.append(entry)
            } else {
                state.entries[state.next] = entry
            }
            state.next = (state.next + 1) % capacity
        }
    }

    /// The entries kept, oldest first.
    public var entries: [Entry] {
        state.withLock { state in
            guard state.entries.count == capacity else { return state.entries }
            return Array(state.entries[state.next...] + state.entries[..<state.next])
        }
    }
}

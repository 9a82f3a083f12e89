/// A fixed-bucket histogram of seconds (or any non-negative quantity), as a value type: the source of a
/// Prometheus histogram (`_bucket{le=…}` cumulative, `_sum`, `_count`).
///
/// `observe` costs one scan over at most `bounds.count` (about 15) bounds and two additions; it allocates
/// nothing. Counts are kept per bucket and made cumulative when read (`cumulativeCounts`).
public struct Histogram: Sendable, Equatable {
    /// Upper bounds (inclusive, `le`), ascending and finite; the implicit last bucket is `+Inf`.
    public let bounds: [Double]
    /// Observations per bucket (not cumulative): `bounds.count + 1` entries, the last one for `+Inf`.
    public private(set) var bucketCounts: [Int]
    /// The sum of every observation.
    public private(set) var sum: Double = 0
    /// The number of observations.
    public private(set) var count: Int = 0

    /// - Precondition: `bounds` is non-empty, finite and strictly ascending.
    public init(bounds: [Double]) {
        precondition(!bounds.isEmpty && bounds.allSatisfy(\.isFinite), "histogram bounds must be finite: \(bounds)")
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must ascend: \(bounds)")
        self.bounds = bounds
        self.bucketCounts = Array(repeating: 0, count: bounds.count + 1)
    }

    /// Counts one observation. A negative value (a wall clock stepped back) counts as 0; NaN is ignored.
    public mutating func observe(_ value: Double) {
        guard !value.isNaN else { return }
        let value = max(0, value)
        var index = 0
        while index < bounds.count, value > bounds[index] { index += 1 }
        bucketCounts[index] += 1
        sum += value
        count += 1
    }

    /// Observations at or below each bound, then the total (`+Inf`): `bounds.count + 1` entries, non-decreasing.
    public var cumulativeCounts: [Int] {
        var running = 0
        return bucketCounts.map { running += $0; return running }
    }

    /// Bounds for the time from a message's acceptance to its ack, seconds (5 ms to 1 h: retries and backoff
    /// make the tail long).
    public static let ackLatencyBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]

    /// Bounds for one store commit, seconds (0.1 ms to 10 s: an fsync on a busy disk).
    public static let commitLatencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1, 0.25, 0.5, 1, 2.5, 10]
}

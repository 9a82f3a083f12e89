import FoundationEssentials
import Glibc

/// Exponential backoff with jitter, as a pure function (ccs-protocol.md §4–5).
///
///     delay(n) = min(cap, base · 2^(n-1)) · (1 + jitter · u),   u ∈ [-1, 1]
///
/// With the defaults (base 1 s, cap 60 s, jitter 0.2), seconds:
///
///     attempt n:   1      2      3      4      5      6      7+
///     delay:       0.8–1.2 1.6–2.4 3.2–4.8 6.4–9.6 12.8–19.2 25.6–38.4 48–60 (capped, never above cap)
public struct Backoff: Sendable, Equatable {
    /// The first delay, seconds.
    public var base: Double
    /// The largest delay, seconds.
    public var cap: Double
    /// The relative spread, 0…1.
    public var jitter: Double

    public init(base: Double = 1, cap: Double = 60, jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// The delay in seconds before retry number `attempt` (1-based), for a jitter draw `u` in [-1, 1].
    public func delay(attempt: Int, u: Double) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 62)))
        let raw = min(cap, base * pow(2, exponent))
        let spread = 1 + jitter * max(-1, min(1, u))
        return min(cap, raw * spread)
    }

    /// The delay for `attempt` with a fresh random draw.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Double {
        delay(attempt: attempt, u: Double.random(in: -1...1, using: &generator))
    }
}

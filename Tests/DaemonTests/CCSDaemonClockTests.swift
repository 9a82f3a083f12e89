@testable import Daemon
import Testing

/// `CCSDaemon.seconds` gives exactly the old `components` conversion, on its fast path and on the other.
@Suite struct CCSDaemonClockTests {
    private static func viaComponents(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    @Test func sameSecondsAsComponents() {
        let perSecond: Int128 = 1_000_000_000_000_000_000
        var durations: [Duration] = [.zero, .nanoseconds(1), .milliseconds(1500), .seconds(3) + .milliseconds(100),
                                     .seconds(86_400 * 365 * 100), .seconds(Int64.max), .seconds(-1), .nanoseconds(-7)]
        // Around whole seconds, where an estimate in Double may land on either side of the exact quotient.
        for seconds in [Int128(1), 7, 1_000, 123_456_789, 1 << 40, 1 << 62] {
            for offset in [Int128(-2), -1, 0, 1, 2] {
                durations.append(Duration(attoseconds: seconds * perSecond + offset))
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let seconds = Int128(Int64.random(in: 0...(1 << 40), using: &generator))
            let fraction = Int128(Int64.random(in: 0..<1_000_000_000_000_000_000, using: &generator))
            durations.append(Duration(attoseconds: seconds * perSecond + fraction))
            durations.append(Duration(attoseconds: -(seconds * perSecond + fraction)))
        }
        for duration in durations {
            #expect(CCSDaemon.seconds(duration).bitPattern == Self.viaComponents(duration).bitPattern, "\(duration)")
        }
    }
}

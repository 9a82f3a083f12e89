import Testing
@testable import Daemon

/// The `time` of an events line: RFC 3339, UTC, milliseconds, always 24 characters.
@Suite struct EventTimeTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_764_504_000_123, "2025-11-30T12:00:00.123Z"),
        (951_782_400_999, "2000-02-29T00:00:00.999Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func rfc3339WithMilliseconds(unixMillis: Int64, expected: String) {
        #expect(CCSDaemon.rfc3339(unixMillis: unixMillis) == expected)
    }
}

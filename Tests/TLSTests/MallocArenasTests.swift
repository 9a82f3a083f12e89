import Glibc
import Testing
@testable import TLS

/// `MallocArenas` finds glibc's mallopt by name (malloc.h is not imported into Swift) and calls it; a missing
/// symbol makes `limit` answer false. What the limit saves is measured, not tested: scripts/perf/flat-rss.
struct MallocArenasTests {
    @Test func glibcTakesTheArenaLimit() throws {
        // The test process's environment has no MALLOC_ARENA_MAX (an operator's setting wins, and is left alone).
        try #require(getenv("MALLOC_ARENA_MAX") == nil)
        #expect(MallocArenas.limit(to: 2))
    }
}

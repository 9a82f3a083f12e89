import Glibc

/// How many malloc arenas glibc may create (`M_ARENA_MAX`, mallopt(3)).
///
/// glibc gives each thread that allocates under contention an arena of its own, up to 8 per core, and each
/// keeps its freed memory: ccsd's threads (the event loop, the intake reader, the store writer, Dispatch's
/// workers) held about 5 MiB more resident under a flood than with one or two arenas (scripts/perf/flat-rss),
/// for no measurable gain in speed, since one event loop does the per-message work. ccsd limits them at start;
/// an operator's `MALLOC_ARENA_MAX` in the environment wins.
public enum MallocArenas {
    /// `M_ARENA_MAX` from glibc's malloc.h (not imported into Swift).
    static let arenaMaxOption: Int32 = -8

    /// Limits the arenas to `count`, unless the environment sets `MALLOC_ARENA_MAX`.
    /// - Returns: true when the limit was set.
    @discardableResult
    public static func limit(to count: Int32) -> Bool {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return false }
        // mallopt is not imported into Swift (malloc.h is not part of the Glibc module): found by name.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }  // RTLD_DEFAULT
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        return mallopt(arenaMaxOption, count) == 1
    }
}

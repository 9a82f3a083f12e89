// jemalloc's settings for the ccsd and ccs-emulator executables, which link Debian's libjemalloc2
// (docs/decisions.md, "Allocator"). jemalloc reads the string `malloc_conf` that the program defines at its
// first allocation; the environment's MALLOC_CONF, read after it, still overrides any of them.
#ifndef CCSD_ALLOCATOR_H
#define CCSD_ALLOCATOR_H

/// "narenas:1,dirty_decay_ms:200,muzzy_decay_ms:0,tcache_nslots_small_max:64": one arena for the process's
/// few threads (the loop, the store writer, the intake reader), whose per-thread caches already keep them
/// off its lock; freed pages returned to the kernel after 0.2 s instead of 10 s; a thread caches at most 64
/// freed blocks of a small size class instead of 200. A 1-connection SQLite flood peaks about 3 MiB lower
/// with 1 s than with 10 s, about 0.6 MiB lower again with 0.2 s (for the same instructions per message;
/// 0 s, returning them at once, cost a quarter more CPU there), and about 0.5 MiB lower again with 64
/// blocks (about 70 instructions per message more in memory, none measurable with SQLite).
extern const char *malloc_conf;

#endif

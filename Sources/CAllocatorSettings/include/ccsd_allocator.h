// jemalloc's settings for the ccsd and ccs-emulator executables, which link Debian's libjemalloc2
// (docs/decisions.md, "Allocator"). jemalloc reads the string `malloc_conf` that the program defines at its
// first allocation; the environment's MALLOC_CONF, read after it, still overrides any of them.
#ifndef CCSD_ALLOCATOR_H
#define CCSD_ALLOCATOR_H

/// "narenas:1,dirty_decay_ms:200,muzzy_decay_ms:0": one arena for the process's few threads (the loop, the
/// store writer, the intake reader), whose per-thread caches already keep them off its lock; freed pages
/// returned to the kernel after 0.2 s instead of 10 s. A 1-connection SQLite flood peaks about 3 MiB lower
/// with 1 s than with 10 s, and about 0.6 MiB lower again with 0.2 s, for the same instructions per message
/// (0 s, returning them at once, cost a quarter more CPU in a SQLite flood).
extern const char *malloc_conf;

#endif

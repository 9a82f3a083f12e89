#include "ccsd_allocator.h"

const char *malloc_conf = "narenas:1,dirty_decay_ms:200,muzzy_decay_ms:0,tcache_nslots_small_max:64";

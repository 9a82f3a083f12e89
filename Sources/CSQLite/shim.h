#ifndef CCSD_CSQLITE_SHIM_H
#define CCSD_CSQLITE_SHIM_H
// SQLite (Debian's libsqlite3) for the Store module.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bound bytes before the call returns.
static inline sqlite3_destructor_type ccsd_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

// Turns SQLite's memory statistics off (process-wide, before the first connection opens): with them on, every
// allocation SQLite makes takes a global mutex and updates counters nothing here reads (sqlite3_status,
// sqlite3_memory_used, soft heap limits). Returns SQLITE_MISUSE, changing nothing, once SQLite is initialized.
static inline int ccsd_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif

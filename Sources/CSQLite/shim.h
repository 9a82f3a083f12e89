#ifndef CCSD_CSQLITE_SHIM_H
#define CCSD_CSQLITE_SHIM_H
// SQLite (Debian's libsqlite3) for the Store module.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bound bytes before the call returns.
static inline sqlite3_destructor_type ccsd_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif

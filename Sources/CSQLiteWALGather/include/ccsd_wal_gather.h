// A VFS over SQLite's default one ("unix") that gathers the writes of a transaction into its write-ahead log
// (the `-wal` file) and hands them to the kernel in one write when the transaction's commit frame is complete,
// instead of two `pwrite64` per WAL frame (its 24-byte header, then its page).
//
// Durability is SQLite's own: the gathered bytes reach the kernel before the commit frame's write returns to
// SQLite, so before any sync, before the wal-index publishes the commit to readers and before the commit
// returns (with `synchronous = NORMAL` too, which does not sync at a commit: a `kill -9` after a commit loses
// nothing). Every other operation on the WAL file (read, sync, truncate, size, locks, file controls, close)
// and the main database file's shared-memory barrier and locks write what is gathered first, so SQLite sees
// the file as if each write had gone straight through. Other files (the database itself, temporary files)
// are not gathered.
#ifndef CCSD_WAL_GATHER_H
#define CCSD_WAL_GATHER_H

#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The VFS name to pass to `sqlite3_open_v2`.
#define CCSD_WAL_GATHER_VFS_NAME "ccsd-wal-gather"

/// Registers the VFS (once per process; later calls return the first result), not as the default: only
/// connections opened with its name use it. Returns an SQLite result code (SQLITE_OK, or SQLITE_ERROR when
/// SQLite has no default VFS, or sqlite3_vfs_register's code).
int ccsd_wal_gather_register(void);

/// The VFS name as a C string (Swift does not import the macro as a pointer).
static inline const char *ccsd_wal_gather_vfs_name(void) { return CCSD_WAL_GATHER_VFS_NAME; }

/// Most bytes gathered before they are written anyway (a transaction larger than this, such as a cache
/// spill, is written in pieces of about this size; each piece ends on a write SQLite made). The buffer grows
/// to what the largest transaction gathered and stays: 1 MiB was as much of ccsd's resident memory after a
/// flood's large commits, for no fewer writes, since gathered bytes go out in pieces of 124 KiB anyway.
#define CCSD_WAL_GATHER_LIMIT (256 * 1024)

/// Tests: opens `path` (created if missing) through the VFS as a WAL file that is not tied to a database
/// connection, into `*file` (free with `ccsd_wal_gather_close_for_testing`). Its methods are called directly.
/// `path` is copied: it need not outlive the call.
int ccsd_wal_gather_open_for_testing(const char *path, sqlite3_file **file);

/// Tests: closes (writing what is gathered) and frees a file from `ccsd_wal_gather_open_for_testing`.
int ccsd_wal_gather_close_for_testing(sqlite3_file *file);

#ifdef __cplusplus
}
#endif

#endif

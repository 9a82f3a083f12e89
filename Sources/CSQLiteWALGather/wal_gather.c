#include "ccsd_wal_gather.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// SQLite's WAL format (wal.c): a 32-byte file header, then frames of a 24-byte header and one page. SQLite
// writes a frame as two writes, the header (walEncodeFrame) and then the page. Bytes 4..7 of a frame header,
// big-endian, are the database size in pages after the commit on a commit frame and zero on any other.
enum { WAL_HEADER_SIZE = 32, FRAME_HEADER_SIZE = 24 };

typedef struct GatherFile GatherFile;

/// One open file: the wrapper SQLite sees, with the default VFS's file right after it (`real`).
struct GatherFile {
    sqlite3_file base;
    sqlite3_file *real;
    /// On the main database file (its calls go straight through, the wal-index barrier and locks after
    /// writing what its WAL gathered): its WAL file while that is open.
    GatherFile *wal;
    /// On a WAL file: its main database file (NULL when not tied to one).
    GatherFile *main;
    /// The gathered bytes: the file's bytes from `start` on, `length` of them, not written yet.
    unsigned char *buffer;
    size_t length, capacity;
    sqlite3_int64 start;
    /// Where the page of a gathered commit frame begins (its header was just gathered); -1 when none.
    sqlite3_int64 commitPageOffset;
    /// The result of a write that failed where no result could be returned (a shared-memory barrier):
    /// returned by the next operation on the WAL file.
    int deferredError;
};

static sqlite3_vfs *underlying;
static sqlite3_vfs gatherVFS;
static const sqlite3_io_methods walMethods;
static const sqlite3_io_methods mainMethods;

/// Most bytes handed to the default VFS's write at once: "unix" writes at most 0x1ffff bytes per `pwrite64`
/// (its `seekAndWrite` masks the count) and reports SQLITE_FULL when a larger write comes up short.
enum { WRITE_PIECE = 128 * 1024 - 4096 };

/// Writes the gathered bytes (in pieces of at most `WRITE_PIECE`); the buffer is empty afterwards whatever
/// the result.
static int flush(GatherFile *file) {
    size_t length = file->length;
    file->length = 0;
    file->commitPageOffset = -1;
    for (size_t done = 0; done < length;) {
        size_t piece = length - done < WRITE_PIECE ? length - done : WRITE_PIECE;
        int rc = file->real->pMethods->xWrite(file->real, file->buffer + done, (int)piece,
                                              file->start + (sqlite3_int64)done);
        if (rc != SQLITE_OK) return rc;
        done += piece;
    }
    return SQLITE_OK;
}

/// Writes what is gathered and returns a deferred error first: before any operation on the WAL file but a
/// gathered write.
static int settle(GatherFile *file) {
    int rc = flush(file);
    if (rc == SQLITE_OK && file->deferredError != SQLITE_OK) {
        rc = file->deferredError;
    }
    file->deferredError = SQLITE_OK;
    return rc;
}

// MARK: - The WAL file

static int walClose(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (file->main) file->main->wal = NULL;
    file->main = NULL;
    free(file->buffer);
    file->buffer = NULL;
    file->capacity = 0;
    int closed = file->real->pMethods->xClose(file->real);
    return rc != SQLITE_OK ? rc : closed;
}

static int walRead(sqlite3_file *pFile, void *out, int amount, sqlite3_int64 offset) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

static int walWrite(sqlite3_file *pFile, const void *bytes, int amount, sqlite3_int64 offset) {
    GatherFile *file = (GatherFile *)pFile;
    int rc;
    if (file->deferredError != SQLITE_OK) {
        rc = file->deferredError;
        file->deferredError = SQLITE_OK;
        return rc;
    }
    // This write is the page of a commit frame whose header was the last write.
    int completesCommit = offset == file->commitPageOffset;
    // Only a write that continues the gathered bytes joins them; any other writes them first, so the file
    // gets every write in SQLite's order (a frame rewritten in place, a savepoint's frames written again).
    if (file->length > 0 && (offset != file->start + (sqlite3_int64)file->length
                             || file->length + (size_t)amount > CCSD_WAL_GATHER_LIMIT)) {
        rc = flush(file);
        if (rc != SQLITE_OK) return rc;
    }
    if ((size_t)amount > CCSD_WAL_GATHER_LIMIT) {
        file->commitPageOffset = -1;
        return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    }
    if (file->length + (size_t)amount > file->capacity) {
        size_t capacity = file->capacity ? file->capacity : 64 * 1024;
        while (capacity < file->length + (size_t)amount) capacity *= 2;
        if (capacity > CCSD_WAL_GATHER_LIMIT) capacity = CCSD_WAL_GATHER_LIMIT;
        unsigned char *grown = realloc(file->buffer, capacity);
        if (grown == NULL) {
            rc = flush(file);
            if (rc != SQLITE_OK) return rc;
            file->commitPageOffset = -1;
            return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
        }
        file->buffer = grown;
        file->capacity = capacity;
    }
    if (file->length == 0) file->start = offset;
    memcpy(file->buffer + file->length, bytes, (size_t)amount);
    file->length += (size_t)amount;

    const unsigned char *b = bytes;
    if (completesCommit) {
        // The commit frame is complete: its bytes reach the kernel before SQLite goes on (to its sync, the
        // wal-index header that makes the commit visible, or, with synchronous = NORMAL, the commit's return).
        return flush(file);
    }
    if (amount == FRAME_HEADER_SIZE && offset >= WAL_HEADER_SIZE && (b[4] | b[5] | b[6] | b[7]) != 0) {
        file->commitPageOffset = offset + FRAME_HEADER_SIZE;
    } else {
        file->commitPageOffset = -1;
    }
    return SQLITE_OK;
}

static int walTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int walSync(sqlite3_file *pFile, int flags) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xSync(file->real, flags);
}

static int walFileSize(sqlite3_file *pFile, sqlite3_int64 *size) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int walLock(sqlite3_file *pFile, int level) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xLock(file->real, level);
}

static int walUnlock(sqlite3_file *pFile, int level) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xUnlock(file->real, level);
}

static int walCheckReservedLock(sqlite3_file *pFile, int *out) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xCheckReservedLock(file->real, out);
}

static int walFileControl(sqlite3_file *pFile, int op, void *argument) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileControl(file->real, op, argument);
}

static int walShmMap(sqlite3_file *pFile, int region, int size, int extend, void volatile **out) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xShmMap(file->real, region, size, extend, out);
}

static int walShmLock(sqlite3_file *pFile, int offset, int count, int flags) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xShmLock(file->real, offset, count, flags);
}

static void walShmBarrier(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = flush(file);
    if (rc != SQLITE_OK && file->deferredError == SQLITE_OK) file->deferredError = rc;
    file->real->pMethods->xShmBarrier(file->real);
}

static int walShmUnmap(sqlite3_file *pFile, int deleteFlag) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xShmUnmap(file->real, deleteFlag);
}

static int walFetch(sqlite3_file *pFile, sqlite3_int64 offset, int amount, void **out) {
    GatherFile *file = (GatherFile *)pFile;
    *out = NULL;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFetch(file->real, offset, amount, out);
}

static int walUnfetch(sqlite3_file *pFile, sqlite3_int64 offset, void *page) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = settle(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xUnfetch(file->real, offset, page);
}

// MARK: - Methods that need no writing first (no I/O), and the main database file

static int passSectorSize(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xSectorSize(file->real);
}

static int passDeviceCharacteristics(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xDeviceCharacteristics(file->real);
}

/// Writes what the main database file's WAL gathered (nothing, after a complete commit frame): a barrier
/// or a lock on the wal-index orders what readers see, so the WAL's bytes go first.
static int flushWALOf(GatherFile *file) {
    return file->wal ? flush(file->wal) : SQLITE_OK;
}

static int mainClose(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    if (file->wal) file->wal->main = NULL;
    file->wal = NULL;
    return file->real->pMethods->xClose(file->real);
}

static int mainRead(sqlite3_file *pFile, void *out, int amount, sqlite3_int64 offset) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

static int mainWrite(sqlite3_file *pFile, const void *bytes, int amount, sqlite3_int64 offset) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
}

static int mainTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int mainSync(sqlite3_file *pFile, int flags) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xSync(file->real, flags);
}

static int mainFileSize(sqlite3_file *pFile, sqlite3_int64 *size) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int mainLock(sqlite3_file *pFile, int level) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xLock(file->real, level);
}

static int mainUnlock(sqlite3_file *pFile, int level) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xUnlock(file->real, level);
}

static int mainCheckReservedLock(sqlite3_file *pFile, int *out) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xCheckReservedLock(file->real, out);
}

static int mainFileControl(sqlite3_file *pFile, int op, void *argument) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xFileControl(file->real, op, argument);
}

static int mainShmMap(sqlite3_file *pFile, int region, int size, int extend, void volatile **out) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xShmMap(file->real, region, size, extend, out);
}

static int mainShmLock(sqlite3_file *pFile, int offset, int count, int flags) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = flushWALOf(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xShmLock(file->real, offset, count, flags);
}

static void mainShmBarrier(sqlite3_file *pFile) {
    GatherFile *file = (GatherFile *)pFile;
    int rc = flushWALOf(file);
    if (rc != SQLITE_OK && file->wal->deferredError == SQLITE_OK) file->wal->deferredError = rc;
    file->real->pMethods->xShmBarrier(file->real);
}

static int mainShmUnmap(sqlite3_file *pFile, int deleteFlag) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xShmUnmap(file->real, deleteFlag);
}

static int mainFetch(sqlite3_file *pFile, sqlite3_int64 offset, int amount, void **out) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xFetch(file->real, offset, amount, out);
}

static int mainUnfetch(sqlite3_file *pFile, sqlite3_int64 offset, void *page) {
    GatherFile *file = (GatherFile *)pFile;
    return file->real->pMethods->xUnfetch(file->real, offset, page);
}

static const sqlite3_io_methods walMethods = {
    3, walClose, walRead, walWrite, walTruncate, walSync, walFileSize, walLock, walUnlock, walCheckReservedLock,
    walFileControl, passSectorSize, passDeviceCharacteristics, walShmMap, walShmLock, walShmBarrier, walShmUnmap,
    walFetch, walUnfetch,
};

static const sqlite3_io_methods mainMethods = {
    3, mainClose, mainRead, mainWrite, mainTruncate, mainSync, mainFileSize, mainLock, mainUnlock,
    mainCheckReservedLock, mainFileControl, passSectorSize, passDeviceCharacteristics, mainShmMap, mainShmLock,
    mainShmBarrier, mainShmUnmap, mainFetch, mainUnfetch,
};

// MARK: - The VFS

/// Opens through the default VFS; a WAL file or the main database gets the wrapper's methods (a WAL file
/// tied to its database's file when `tie` is set: only for names SQLite itself passed), any other file the
/// default VFS's own (it lies at the start of the wrapper's room, which is large enough for it).
static int openFile(const char *name, sqlite3_file *pFile, int flags, int *outFlags, int tie) {
    if ((flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_DB)) == 0) {
        return underlying->xOpen(underlying, name, pFile, flags, outFlags);
    }
    GatherFile *file = (GatherFile *)pFile;
    memset(file, 0, sizeof *file);
    file->real = (sqlite3_file *)(file + 1);
    file->commitPageOffset = -1;
    int rc = underlying->xOpen(underlying, name, file->real, flags, outFlags);
    if (file->real->pMethods == NULL) {
        file->base.pMethods = NULL;
        return rc;
    }
    if (flags & SQLITE_OPEN_WAL) {
        file->base.pMethods = &walMethods;
        if (tie && name) {
            sqlite3_file *main = sqlite3_database_file_object(name);
            if (main && main->pMethods == &mainMethods) {
                file->main = (GatherFile *)main;
                file->main->wal = file;
            }
        }
    } else {
        file->base.pMethods = &mainMethods;
    }
    return rc;
}

static int vfsOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *pFile, int flags, int *outFlags) {
    (void)vfs;
    return openFile(name, pFile, flags, outFlags, 1);
}

static int vfsDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    return underlying->xDelete(underlying, name, syncDirectory);
}

static int vfsAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return underlying->xAccess(underlying, name, flags, out);
}

static int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return underlying->xFullPathname(underlying, name, size, out);
}

static void *vfsDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return underlying->xDlOpen(underlying, name);
}

static void vfsDlError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    underlying->xDlError(underlying, size, out);
}

static void (*vfsDlSym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return underlying->xDlSym(underlying, handle, symbol);
}

static void vfsDlClose(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    underlying->xDlClose(underlying, handle);
}

static int vfsRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return underlying->xRandomness(underlying, size, out);
}

static int vfsSleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return underlying->xSleep(underlying, microseconds);
}

static int vfsCurrentTime(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return underlying->xCurrentTime(underlying, out);
}

static int vfsGetLastError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return underlying->xGetLastError ? underlying->xGetLastError(underlying, size, out) : 0;
}

static int vfsCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    if (underlying->iVersion >= 2 && underlying->xCurrentTimeInt64) {
        return underlying->xCurrentTimeInt64(underlying, out);
    }
    double days = 0;
    int rc = underlying->xCurrentTime(underlying, &days);
    *out = (sqlite3_int64)(days * 86400000.0);
    return rc;
}

static int registered = SQLITE_MISUSE;

static void registerOnce(void) {
    underlying = sqlite3_vfs_find(NULL);
    if (underlying == NULL) {
        registered = SQLITE_ERROR;
        return;
    }
    gatherVFS = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(GatherFile) + underlying->szOsFile,
        .mxPathname = underlying->mxPathname,
        .zName = CCSD_WAL_GATHER_VFS_NAME,
        .xOpen = vfsOpen,
        .xDelete = vfsDelete,
        .xAccess = vfsAccess,
        .xFullPathname = vfsFullPathname,
        .xDlOpen = vfsDlOpen,
        .xDlError = vfsDlError,
        .xDlSym = vfsDlSym,
        .xDlClose = vfsDlClose,
        .xRandomness = vfsRandomness,
        .xSleep = vfsSleep,
        .xCurrentTime = vfsCurrentTime,
        .xGetLastError = vfsGetLastError,
        .xCurrentTimeInt64 = vfsCurrentTimeInt64,
    };
    registered = sqlite3_vfs_register(&gatherVFS, 0);
}

int ccsd_wal_gather_register(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, registerOnce);
    return registered;
}

int ccsd_wal_gather_open_for_testing(const char *path, sqlite3_file **out) {
    *out = NULL;
    int rc = ccsd_wal_gather_register();
    if (rc != SQLITE_OK) return rc;
    // The name is copied after the file, in the same allocation: the default VFS keeps the pointer it is
    // given (SQLite keeps a name valid until the close) and reads it later, at the first sync (the
    // directory it syncs once after creating a file). The caller's string may be gone by then (a Swift
    // string's temporary C copy). Zeros after it: SQLite's names end with two NULs at least.
    size_t pathLength = strlen(path);
    sqlite3_file *file = calloc(1, (size_t)gatherVFS.szOsFile + pathLength + 4);
    if (file == NULL) return SQLITE_NOMEM;
    char *name = (char *)file + gatherVFS.szOsFile;
    memcpy(name, path, pathLength);
    rc = openFile(name, file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_WAL, NULL, 0);
    if (rc != SQLITE_OK) {
        if (file->pMethods) file->pMethods->xClose(file);
        free(file);
        return rc;
    }
    *out = file;
    return SQLITE_OK;
}

int ccsd_wal_gather_close_for_testing(sqlite3_file *file) {
    if (file == NULL) return SQLITE_OK;
    int rc = file->pMethods ? file->pMethods->xClose(file) : SQLITE_OK;
    free(file);
    return rc;
}

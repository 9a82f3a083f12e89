#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state directory, created if missing (mode 0700), held with an exclusive `flock` on `DIR/ccsd.lock` for
/// the store's life so that a second ccsd on the same directory is refused instead of sharing the database.
///
/// The lock belongs to the open file description: it is released when the store closes or the process dies
/// (even by `kill -9`), so a stale lock file never blocks a restart.
final class DirectoryLock {
    let directory: String
    let lockPath: String
    private var descriptor: Int32

    /// - Throws: `StoreError.cannotOpen` when the directory cannot be made or the lock file opened,
    ///   `.readOnly` when the directory cannot be written (read-only file system, permissions),
    ///   `.directoryInUse` when another process (or store) holds the lock.
    init(directory: String) throws(StoreError) {
        self.directory = directory
        self.lockPath = directory.hasSuffix("/") ? directory + "ccsd.lock" : directory + "/ccsd.lock"
        try DirectoryLock.makeDirectory(directory)
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            // A read-only file system or directory shows here first, before SQLite would only say that it is
            // "unable to open database file".
            let code: StoreError.Code = errno == EROFS || errno == EACCES || errno == EPERM ? .readOnly : .cannotOpen
            throw StoreError(code: code, path: lockPath, operation: "opening the lock file",
                             message: DirectoryLock.errnoText())
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let message = busy
                ? "another process holds the lock (is another ccsd running with this state directory?)"
                : DirectoryLock.errnoText()
            close(fd)
            throw StoreError(code: busy ? .directoryInUse : .cannotOpen, path: lockPath,
                             operation: "locking the state directory", message: message)
        }
        descriptor = fd
    }

    deinit { unlock() }

    func unlock() {
        guard descriptor >= 0 else { return }
        close(descriptor)  // releases the flock
        descriptor = -1
    }

    /// `mkdir -p` with mode 0700 for each directory it makes; existing directories keep their mode.
    private static func makeDirectory(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw StoreError(code: .cannotOpen, path: prefix, operation: "creating the state directory",
                                 message: errnoText())
            }
            prefix += "/"
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(code: .cannotOpen, path: path, operation: "creating the state directory",
                             message: "not a directory")
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

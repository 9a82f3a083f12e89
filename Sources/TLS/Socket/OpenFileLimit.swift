import Glibc

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`, getrlimit(2)).
///
/// Every connection is a socket, and the usual soft limit (1024) is below what 1,000 CCS connections plus
/// the state, log and events files need; the hard limit (often 524288 under systemd) is not. ccsd and the
/// emulator raise their soft limit to the hard limit at start.
public enum OpenFileLimit {
    /// Raises the soft limit to the hard limit when it is lower.
    /// - Returns: the soft limit in force afterwards (unchanged when raising failed), or nil when it could not be read.
    @discardableResult
    public static func raiseToHardLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}

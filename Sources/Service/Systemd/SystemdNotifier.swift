import CSystemd
import FoundationEssentials
import Glibc

/// Tells systemd about the service's state through `sd_notify` (`Type=notify`): readiness, a status line, the
/// watchdog, reloads and the stop. Without `NOTIFY_SOCKET` (not run by systemd) every call does nothing.
/// Source: sd_notify(3), sd_watchdog_enabled(3). libsystemd is loaded (dlopen) only when the environment
/// names systemd; `libraryProblem` says when it is needed but cannot be loaded.
///
/// Each call sends one datagram of newline-separated `KEY=VALUE` assignments. Values are made single-line
/// (a newline would start a new assignment). Thread-safe: `sd_notify` opens its own socket per call.
public final class SystemdNotifier: @unchecked Sendable {
    // @unchecked Sendable: the only stored property is immutable.
    private let watchdogMicroseconds: UInt64?

    /// Reads `WATCHDOG_USEC`/`WATCHDOG_PID` once (sd_watchdog_enabled(3)); `NOTIFY_SOCKET` is read by every call.
    public init() {
        var usec: UInt64 = 0
        watchdogMicroseconds = ccsd_sd_watchdog_enabled(0, &usec) > 0 && usec > 0 ? usec : nil
    }

    /// `READY=1` with `STATUS=status`: the store is open and the API listens (and after a reload).
    public func ready(status: String) {
        send(["READY=1", "STATUS=" + Self.singleLine(status)])
    }

    /// `STATUS=line`: a human line, e.g. "2/2 connections ready, 12 queued, 40 in flight" (`ServiceStatusLine`).
    public func status(_ line: String) {
        send(["STATUS=" + Self.singleLine(line)])
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC, µs: newer systemd pairs the two for
    /// `Type=notify-reload`; systemd 252 ignores it) before a reload; `ready(status:)` after it.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let micros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send(["RELOADING=1", "STATUS=reloading the configuration", "MONOTONIC_USEC=\(micros)"])
    }

    /// `EXTEND_TIMEOUT_USEC=` (`seconds` from now) with `STATUS=status`: the start (or stop) is still going,
    /// e.g. a migration of the store; systemd extends its timeout by that much (sd_notify(3)).
    public func extendStartTimeout(seconds: Int, status: String) {
        send(["EXTEND_TIMEOUT_USEC=\(seconds * 1_000_000)", "STATUS=" + Self.singleLine(status)])
    }

    /// `STOPPING=1`: the graceful stop began.
    public func stopping() {
        send(["STOPPING=1", "STATUS=stopping"])
    }

    /// `WATCHDOG=1`: the event loop is alive. Call every `watchdogInterval` seconds from the loop.
    public func watchdog() {
        send(["WATCHDOG=1"])
    }

    /// Seconds between `watchdog()` calls (half of `WatchdogSec=`), or nil when the watchdog is off.
    public var watchdogInterval: Double? {
        watchdogMicroseconds.map { Double($0) / 2_000_000 }
    }

    /// Why libsystemd cannot be loaded although the environment names systemd (`NOTIFY_SOCKET`, `WATCHDOG_USEC`
    /// or `LISTEN_PID` set), naming the library and giving dlerror's text; nil when it is loaded or not needed.
    /// Without it, no notification reaches systemd and the sockets it passes are not seen.
    public static var libraryProblem: String? {
        guard ccsd_systemd_wanted() != 0, let reason = ccsd_systemd_load() else { return nil }
        return String(cString: reason)
    }

    /// Whether systemd listens (`NOTIFY_SOCKET` is set).
    public var isEnabled: Bool { getenv("NOTIFY_SOCKET") != nil }

    /// Sends the assignments as one datagram; failures are ignored (sd_notify(3): a missing or unreachable
    /// socket must not stop the service).
    private func send(_ assignments: [String]) {
        guard isEnabled else { return }
        _ = ccsd_sd_notify(0, assignments.joined(separator: "\n"))
    }

    /// `text` with line breaks turned into spaces.
    static func singleLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}

/// Listening sockets passed by systemd socket activation (`sd_listen_fds`, `LISTEN_FDS`), from fd 3 up.
public enum SystemdSockets {
    /// The passed descriptors (close-on-exec set); empty when not socket-activated. Source: sd_listen_fds(3).
    public static func listenFDs() -> [Int32] {
        let count = ccsd_sd_listen_fds(1)
        guard count > 0 else { return [] }
        return (0..<count).map { SD_LISTEN_FDS_START + $0 }
    }
}

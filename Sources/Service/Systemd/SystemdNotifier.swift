import CSystemd
import Foundation

/// Tells systemd about the service's state through `sd_notify` (`Type=notify`): readiness, a status line, the
/// watchdog, reloads and the stop. Without `NOTIFY_SOCKET` (not run by systemd) every call does nothing.
/// Source: sd_notify(3), sd_watchdog_enabled(3).
///
/// Interface first (the serve command calls it); the notifications themselves are being built.
public final class SystemdNotifier: @unchecked Sendable {
    public init() {}

    /// `READY=1` with `STATUS=status`: the store is open and the API listens.
    public func ready(status: String) {}

    /// `STATUS=line`: a human line, e.g. "2/2 connections ready, 12 queued, 40 in flight".
    public func status(_ line: String) {}

    /// `RELOADING=1` (before a reload; `ready(status:)` after it).
    public func reloading() {}

    /// `STOPPING=1`: the graceful stop began.
    public func stopping() {}

    /// `WATCHDOG=1`: the event loop is alive. Call every `watchdogInterval` seconds from the loop.
    public func watchdog() {}

    /// Seconds between `watchdog()` calls (half of `WatchdogSec=`), or nil when the watchdog is off.
    public var watchdogInterval: Double? { nil }
}

/// Listening sockets passed by systemd socket activation (`sd_listen_fds`, `LISTEN_FDS`), from fd 3 up.
public enum SystemdSockets {
    /// The passed descriptors (close-on-exec set); empty when not socket-activated. Source: sd_listen_fds(3).
    public static func listenFDs() -> [Int32] {
        let count = sd_listen_fds(1)
        guard count > 0 else { return [] }
        return (0..<count).map { SD_LISTEN_FDS_START + $0 }
    }
}

import Daemon
import Dispatch
import FoundationEssentials
import Glibc

/// The systemd side of `ccsd serve`, driven on the daemon's loop (sd_notify(3) through `SystemdNotifier`):
/// - `ready()`: `READY=1` with the status line; then `STATUS=` every `statusInterval` seconds when the line
///   changed, and `WATCHDOG=1` every `watchdogInterval` (half of `WatchdogSec=`) from the loop itself, so a
///   wedged loop stops the pings and systemd restarts ccsd;
/// - `reload(_:)` (SIGHUP): `RELOADING=1`, `CCSDaemon.reload`, then `READY=1` with the status line, which
///   leads with `reload refused: FIELD: RULE` when the new configuration was refused (the old one runs on);
/// - `stopping()`: `STOPPING=1` once the graceful stop begins.
/// Without `NOTIFY_SOCKET` every notification is a no-op; the reload works the same.
public final class SystemdSupervisor: @unchecked Sendable {
    // @unchecked Sendable: confined to the daemon's loop; `handleSIGHUP` only posts to it.
    public let notifier: SystemdNotifier
    private let daemon: CCSDaemon
    private let scheduler: any LoopScheduler
    private let logger: Logger
    private let statusInterval: Double
    private var lastStatus: String?
    private var refusal: String?
    private var started = false
    private var statusTimer: (any ScheduledWork)?
    private var watchdogTimer: (any ScheduledWork)?
    /// Called on the loop with the new configuration after a reload was applied (the service's own settings
    /// follow it: the webhook).
    public var onReloadApplied: ((Configuration) -> Void)?

    /// - Parameters:
    ///   - scheduler: the daemon's loop (the watchdog and status timers run on it).
    ///   - statusInterval: seconds between status line checks (sent only when changed).
    public init(daemon: CCSDaemon, scheduler: any LoopScheduler, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier(), statusInterval: Double = 5) {
        self.daemon = daemon
        self.scheduler = scheduler
        self.logger = logger
        self.notifier = notifier
        self.statusInterval = statusInterval
        if let problem = SystemdNotifier.libraryProblem {
            logger.error("systemd runs ccsd but its library is missing: no readiness, watchdog or stop reaches it, and the sockets it passes are not used",
                         ["reason": problem])
        }
    }

    /// The status line now (`ServiceStatusLine` of the daemon's snapshot, after a refusal if the last reload was refused).
    public func statusLine() -> String {
        let line = ServiceStatusLine.make(daemon.snapshot(), configuredConnections: daemon.configuration.connections)
        return refusal.map { "reload refused: \($0); \(line)" } ?? line
    }

    /// The store is open and the API listens: `READY=1`, then the status and watchdog timers. Call on the loop, once.
    public func ready() {
        guard !started else { return }
        started = true
        let line = statusLine()
        lastStatus = line
        notifier.ready(status: line)
        scheduleStatus()
        if let interval = notifier.watchdogInterval {
            logger.info("systemd watchdog on", ["interval_seconds": "\(interval)"])
            scheduleWatchdog(every: interval)
        }
    }

    /// SIGHUP with the configuration read again: `RELOADING=1`, the reload, `READY=1`. Call on the loop.
    @discardableResult
    public func reload(_ configuration: Configuration) -> CCSDaemon.ReloadResult {
        notifier.reloading()
        let result = daemon.reload(configuration)
        switch result {
        case .applied:
            refusal = nil
            onReloadApplied?(configuration)
        case .refused(let reason): refusal = reason
        }
        finishReload()
        return result
    }

    /// SIGHUP whose configuration could not be read or broke a rule (`error` names the field): logged,
    /// the running configuration kept, `READY=1` again. Call on the loop.
    public func reloadFailed(_ error: any Error) {
        notifier.reloading()
        refusal = "\(error)"
        logger.error("configuration reload refused; the running configuration is kept", ["error": "\(error)"])
        finishReload()
    }

    /// The graceful stop began: `STOPPING=1`; status lines end (the watchdog pings on until exit). Call on the loop.
    public func stopping() {
        statusTimer?.cancel()
        statusTimer = nil
        notifier.stopping()
    }

    /// Installs the SIGHUP handler: `read` (off the loop: it reads files) makes the new configuration, then
    /// `reload` or `reloadFailed` runs on the loop. Keep the returned source; cancel it at exit.
    public func handleSIGHUP(reading read: @escaping @Sendable () throws -> Configuration) -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler { [self] in
            let outcome = Result { try read() }
            daemon.execute { [self] in
                switch outcome {
                case .success(let configuration): reload(configuration)
                case .failure(let error): reloadFailed(error)
                }
            }
        }
        source.resume()
        return source
    }

    private func finishReload() {
        let line = statusLine()
        lastStatus = line
        notifier.ready(status: line)
    }

    private func scheduleStatus() {
        statusTimer = scheduler.schedule(at: scheduler.now + .milliseconds(Int64(statusInterval * 1000))) { [weak self] in
            guard let self, self.statusTimer != nil else { return }
            let line = self.statusLine()
            if line != self.lastStatus {
                self.lastStatus = line
                self.notifier.status(line)
            }
            self.scheduleStatus()
        }
    }

    private func scheduleWatchdog(every interval: Double) {
        watchdogTimer = scheduler.schedule(at: scheduler.now + .milliseconds(Int64(interval * 1000))) { [weak self] in
            guard let self else { return }
            self.notifier.watchdog()
            self.scheduleWatchdog(every: interval)
        }
    }
}

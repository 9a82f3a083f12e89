import Daemon

/// The human status line systemd shows (`STATUS=`, `systemctl status`) for a daemon snapshot, e.g.
/// "2/2 connections ready, 12 queued, 40 in flight". Pure: a snapshot in, a line out.
///
/// Parts, in order: `R/N connections ready` (N is the configured count when given, else the open
/// connections not draining), `, D draining` when any drains, `, Q queued`, `, F in flight`, then
/// `; store not writable` when the store refuses writes; a lifecycle other than `running` leads the line
/// (`stopping: …`).
public enum ServiceStatusLine {
    /// - Parameters:
    ///   - snapshot: `CCSDaemon.snapshot()`.
    ///   - configuredConnections: the `connections` setting; nil counts the open connections not draining.
    public static func make(_ snapshot: DaemonSnapshot, configuredConnections: Int? = nil) -> String {
        let draining = snapshot.connections.filter { $0.state == .draining }.count
        let total = configuredConnections ?? (snapshot.connections.count - draining)
        var line = "\(snapshot.readyConnections)/\(total) connection\(total == 1 ? "" : "s") ready"
        if draining > 0 { line += ", \(draining) draining" }
        line += ", \(snapshot.queued) queued, \(snapshot.inFlight) in flight"
        if !snapshot.storeWritable { line += "; store not writable" }
        if snapshot.lifecycle != "running" { line = "\(snapshot.lifecycle): " + line }
        return line
    }
}

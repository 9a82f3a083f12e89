@testable import CCS
import Foundation
import Testing
@testable import Daemon
@testable import Service

/// `SystemdNotifier` against a datagram Unix socket the test binds and names in `NOTIFY_SOCKET`, the way
/// systemd receives sd_notify(3) messages. Serialized: the environment is the process's.
@Suite(.serialized) struct SystemdNotifierTests {
    /// A bound `AF_UNIX`/`SOCK_DGRAM` socket in a fresh temporary directory; reads without blocking.
    final class NotifySocket {
        let path: String
        let fd: Int32

        init() throws {
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("ccsd-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("notify").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
        }

        /// Every datagram waiting now, oldest first.
        func datagrams() -> [String] {
            var result: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if count <= 0 { return result }
                result.append(String(decoding: buffer[0..<count], as: UTF8.self))
            }
        }

        deinit {
            close(fd)
            unlink(path)
            rmdir((path as NSString).deletingLastPathComponent)
        }
    }

    /// Assignments of one datagram, `KEY=VALUE` per line, each well-formed.
    static func assignments(_ datagram: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in datagram.split(separator: "\n", omittingEmptySubsequences: false) {
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            #expect(parts.count == 2 && !parts[0].isEmpty && parts[0].allSatisfy { $0.isUppercase || $0 == "_" }, "bad line \(line)")
            if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
        }
        return result
    }

    @Test func sendsReadyStatusWatchdogReloadingStoppingInOrder() throws {
        let socket = try NotifySocket()
        setenv("NOTIFY_SOCKET", socket.path, 1)
        setenv("WATCHDOG_USEC", "4000000", 1)
        setenv("WATCHDOG_PID", "\(getpid())", 1)
        defer {
            unsetenv("NOTIFY_SOCKET")
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        let notifier = SystemdNotifier()
        #expect(notifier.watchdogInterval == 2)  // half of WatchdogSec=4
        notifier.ready(status: "1/1 connection ready,\n0 queued")
        notifier.status("2/2 connections ready, 12 queued, 40 in flight")
        notifier.watchdog()
        notifier.reloading()
        notifier.ready(status: "2/4 connections ready, 0 queued, 0 in flight")
        notifier.stopping()

        let sent = socket.datagrams().map(Self.assignments)
        try #require(sent.count == 6)
        #expect(sent[0] == ["READY": "1", "STATUS": "1/1 connection ready, 0 queued"])
        #expect(sent[1] == ["STATUS": "2/2 connections ready, 12 queued, 40 in flight"])
        #expect(sent[2] == ["WATCHDOG": "1"])
        #expect(sent[3]["RELOADING"] == "1")
        let monotonic = try #require(sent[3]["MONOTONIC_USEC"].flatMap { UInt64($0) })
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        #expect(monotonic > 0 && monotonic <= UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)
        #expect(sent[4] == ["READY": "1", "STATUS": "2/4 connections ready, 0 queued, 0 in flight"])
        #expect(sent[5]["STOPPING"] == "1")
    }

    @Test func watchdogIsOffWithoutWatchdogSecOrForAnotherProcess() {
        unsetenv("WATCHDOG_USEC")
        #expect(SystemdNotifier().watchdogInterval == nil)
        setenv("WATCHDOG_USEC", "4000000", 1)
        setenv("WATCHDOG_PID", "\(getpid() + 1)", 1)  // meant for another process (sd_watchdog_enabled(3))
        defer {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        #expect(SystemdNotifier().watchdogInterval == nil)
    }

    @Test func withoutNotifySocketNothingIsSentAndNothingFails() throws {
        let socket = try NotifySocket()
        unsetenv("NOTIFY_SOCKET")
        let notifier = SystemdNotifier()
        #expect(!notifier.isEnabled)
        notifier.ready(status: "ready")
        notifier.status("status")
        notifier.watchdog()
        notifier.reloading()
        notifier.stopping()
        #expect(socket.datagrams().isEmpty)
    }
}

@Suite struct ServiceStatusLineTests {
    static func connection(_ id: Int, _ state: DaemonSnapshot.Connection.State, inFlight: Int = 0) -> DaemonSnapshot.Connection {
        DaemonSnapshot.Connection(id: id, endpoint: Endpoint(host: "localhost", port: 5235), state: state,
                                  inFlight: inFlight, window: 100)
    }

    static func snapshot(_ connections: [DaemonSnapshot.Connection], queued: Int, lifecycle: String = "running",
                         storeWritable: Bool = true) -> DaemonSnapshot {
        let inFlight = connections.reduce(0) { $0 + $1.inFlight }
        return DaemonSnapshot(lifecycle: lifecycle, connections: connections, outstanding: queued + inFlight,
                              inFlight: inFlight, queued: queued, storeWritable: storeWritable, counters: DispatcherCounters())
    }

    @Test func readyQueuedAndInFlight() {
        let snapshot = Self.snapshot([Self.connection(1, .ready, inFlight: 25), Self.connection(2, .ready, inFlight: 15)], queued: 12)
        #expect(ServiceStatusLine.make(snapshot, configuredConnections: 2) == "2/2 connections ready, 12 queued, 40 in flight")
        #expect(ServiceStatusLine.make(snapshot) == "2/2 connections ready, 12 queued, 40 in flight")
    }

    @Test func drainingConnectingStoppingAndStoreDown() {
        let snapshot = Self.snapshot([Self.connection(1, .ready, inFlight: 3), Self.connection(2, .draining, inFlight: 4),
                                      Self.connection(3, .connecting)], queued: 0, lifecycle: "stopping", storeWritable: false)
        #expect(ServiceStatusLine.make(snapshot, configuredConnections: 2)
                == "stopping: 1/2 connections ready, 1 draining, 0 queued, 7 in flight; store not writable")
        #expect(ServiceStatusLine.make(Self.snapshot([], queued: 5), configuredConnections: 1)
                == "0/1 connection ready, 5 queued, 0 in flight")
    }
}

@testable import CCS
import CCS
import Foundation
import Store
import Synchronization
import Testing
import TestSupport
import XMPP
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

    /// While the store migrates at start, every report pushes systemd's start timeout out by 120 s and says why
    /// in the status line (`ServeCommand.startProgress`).
    @Test func aMigrationAtStartExtendsTheStartTimeoutAtEveryReport() throws {
        let socket = try NotifySocket()
        setenv("NOTIFY_SOCKET", socket.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        let progress = ServeCommand.startProgress(logger: Logger(minimum: .error), notifier: SystemdNotifier())
        progress(3)
        progress(3)
        let sent = socket.datagrams().map(Self.assignments)
        #expect(sent == Array(repeating: ["EXTEND_TIMEOUT_USEC": "120000000",
                                          "STATUS": "migrating the store to schema version 3"], count: 2))
    }

    /// Work the store writer posts from its queue, run on the manual loop by `settle`.
    final class Inbox: @unchecked Sendable {
        private let items = Locked<[@Sendable () -> Void]>([])
        func post(_ work: @escaping @Sendable () -> Void) { items.withLock { $0.append(work) } }
        func take() -> [@Sendable () -> Void] { items.withLock { let taken = $0; $0.removeAll(); return taken } }
    }

    /// The supervisor on a real daemon (mock connections, manual loop): READY with the status line, WATCHDOG
    /// from the loop's timer, RELOADING/READY around an applied and a refused reload, STATUS when the line
    /// changes, STOPPING, in that order.
    @Test func supervisorNotifiesAroundTheDaemonsLife() throws {
        let socket = try NotifySocket()
        setenv("NOTIFY_SOCKET", socket.path, 1)
        setenv("WATCHDOG_USEC", "4000000", 1)
        setenv("WATCHDOG_PID", "\(getpid())", 1)
        defer {
            unsetenv("NOTIFY_SOCKET")
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        let loop = ManualLoop()
        let inbox = Inbox()
        let factory = MockConnectionFactory(loop: loop)
        var configuration = Configuration()
        configuration.senderID = "123456789012"
        configuration.serverKey = Secret("AAAA-test-key")
        configuration.primaryEndpoint = Endpoint(host: "ccs.test", port: 5235)
        configuration.store = .memory
        let logger = Logger(minimum: .error)
        let daemon = CCSDaemon(configuration: configuration, store: InMemoryMessageStore(), outlet: MemoryOutlet(), logger: logger,
                               scheduler: loop, post: { [weak inbox] in inbox?.post($0) }, connections: factory, exitWhenDone: false,
                               onExit: { _ in })
        func settle(until condition: () -> Bool) {
            for _ in 0..<2000 where !condition() {
                loop.run()
                for work in inbox.take() { loop.enqueue(work) }
                loop.run()
                usleep(500)
            }
        }
        daemon.start()
        settle { !factory.made.isEmpty }
        factory.made[0].deliverReady()
        settle { factory.made[0].isOpen && daemon.snapshot().readyConnections == 1 }

        let supervisor = SystemdSupervisor(daemon: daemon, scheduler: loop, logger: logger, statusInterval: 5)
        supervisor.ready()
        loop.advance(by: .seconds(2))  // the watchdog interval: half of WatchdogSec=4
        var more = configuration
        more.connections = 2
        #expect(supervisor.reload(more) == .applied(changes: ["connections 1→2"]))
        var moved = more
        moved.senderID = "999"
        guard case .refused = supervisor.reload(moved) else {
            Issue.record("a changed sender_id was not refused")
            return
        }
        settle { factory.made.count == 2 }
        factory.made[1].deliverReady()
        settle { daemon.snapshot().readyConnections == 2 }
        loop.advance(by: .seconds(3))  // t = 5: the status timer sees the new line (and a second watchdog ping at 4)
        supervisor.stopping()

        let sent = socket.datagrams().map(Self.assignments)
        let kinds = sent.map { message in
            ["READY", "WATCHDOG", "RELOADING", "STOPPING"].first { message[$0] == "1" } ?? (message["STATUS"] != nil ? "STATUS" : "?")
        }
        #expect(kinds == ["READY", "WATCHDOG", "RELOADING", "READY", "RELOADING", "READY", "WATCHDOG", "STATUS", "STOPPING"])
        guard kinds.count == 9 else { return }
        #expect(sent[0]["STATUS"] == "1/1 connection ready, 0 queued, 0 in flight")
        #expect(sent[3]["STATUS"] == "1/2 connections ready, 0 queued, 0 in flight")
        let refused = sent[5]["STATUS"] ?? ""
        #expect(refused.hasPrefix("reload refused: configuration error: sender_id: cannot change while ccsd runs"))
        #expect(refused.hasSuffix("; 1/2 connections ready, 0 queued, 0 in flight"))
        #expect(sent[7]["STATUS"]?.hasSuffix("; 2/2 connections ready, 0 queued, 0 in flight") == true)
        #expect(daemon.configuration.connections == 2 && daemon.configuration.senderID == "123456789012")
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

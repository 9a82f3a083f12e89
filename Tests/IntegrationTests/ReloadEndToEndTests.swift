import CCS
import Daemon
import Foundation
import Synchronization
import Testing
import XMPP

/// A reload (`CCSDaemon.reload`) on the real daemon against the emulator over TLS on loopback: the pool grows
/// and shrinks under load without losing or doubling a message, and connections opened after a reload use
/// its server key.
@Suite struct ReloadEndToEndTests {
    /// Reloads on the daemon's loop with `change` applied to the running configuration; returns the result.
    static func reload(_ run: DaemonRun, _ change: @escaping @Sendable (inout Configuration) -> Void) async -> CCSDaemon.ReloadResult? {
        let box = Locked<CCSDaemon.ReloadResult?>(nil)
        let daemon = run.daemon
        run.loop.execute {
            var configuration = daemon.configuration
            change(&configuration)
            let result = daemon.reload(configuration)
            box.withLock { $0 = result }
        }
        _ = await waitUntil("the reload") { box.withLock { $0 != nil } }
        return box.withLock { $0 }
    }

    @Test func connectionsGrowAndShrinkUnderLoadWithoutLosingAMessage() async throws {
        let run = try DaemonRun(emulator: { $0.ackLatencyMilliseconds = 50 }, daemon: { $0.connections = 1; $0.window = 20 })
        defer { run.stop(); run.cleanUp() }
        let messages = DaemonRun.messages(600, prefix: "reload")
        run.send(Array(messages[0..<300]))
        guard await waitUntil("first acks", { run.events("acked").count >= 20 }) else { return }
        #expect(await Self.reload(run) { $0.connections = 3 } == .applied(changes: ["connections 1→3"]))
        guard await waitUntil("three connections", { run.emulator.stats().authenticated >= 3 }) else { return }
        run.send(Array(messages[300...]))
        guard await waitUntil("messages on the new connections", { run.events("acked").count >= 350 }) else { return }
        #expect(await Self.reload(run) { $0.connections = 1 } == .applied(changes: ["connections 3→1"]))
        run.endInput()
        guard await waitUntil("the end", timeout: 30, { run.exited != nil }) else { return }
        #expect(run.exited == 0)
        let counts = run.finalCounts
        #expect(counts.count == 600 && counts.values.allSatisfy { $0 == 1 })
        #expect(run.events("acked").count == 600)
        let stats = run.emulator.stats()
        #expect(stats.flowControlViolations == 0)
        #expect(stats.authenticated == 3)  // the connections that left were not replaced
    }

    @Test func connectionsOpenedAfterAReloadUseItsServerKey() async throws {
        let run = try DaemonRun(exitWhenDone: false, daemon: { $0.connections = 1 })
        defer { run.stop(); run.cleanUp() }
        run.send(DaemonRun.messages(5, prefix: "key"))
        guard await waitUntil("acks with the first key", { run.events("acked").count == 5 }) else { return }
        // A second connection with a key the emulator does not know: its login fails, which stops ccsd (exit
        // 3, a configuration error). With the start-up key it would have logged in.
        let result = await Self.reload(run) {
            $0.serverKey = Secret("AAAA-rotated-to-a-key-the-server-refuses")
            $0.connections = 2
        }
        #expect(result == .applied(changes: ["connections 1→2", "server key rotated (new connections)"]))
        guard await waitUntil("the refused login", { run.exited != nil }) else { return }
        #expect(run.exited == 3)
        #expect(run.emulator.stats().authFailures == 1 && run.emulator.stats().authenticated == 1)
    }
}

import CCS
import Testing
import TestSupport
import XMPP
@testable import Daemon

/// `CCSDaemon.reload(_:)` on the real daemon with mock connections and the manual loop: connections come
/// and go without dropping a message; refusals keep the running configuration.
@Suite struct DaemonReloadTests {
    typealias Harness = DaemonDriverTests.Harness

    static func ack(_ id: String, on connection: MockXMPPConnection) {
        connection.deliver(Harness.message(#"{"message_type":"ack","message_id":"\#(id)","from":"tok-\#(id)-APA91b"}"#))
    }

    static func downstreamIDs(_ connection: MockXMPPConnection) -> [String] {
        connection.sent.filter { $0.contains("\"data\"") }.compactMap { stanza in
            stanza.firstMatch(of: /"message_id":"([^"]+)"/).map { String($0.1) }
        }
    }

    /// A reload that changes the intake byte bound resizes SQLite's page cache with it (a quarter of the
    /// bound, 512 to 2,000 KiB), on the writer's queue; one that leaves the bound alone, or a memory store,
    /// does not.
    @Test func aReloadThatChangesTheByteBoundResizesThePageCache() {
        let h = Harness()
        h.startReady()
        #expect(h.daemon.reload(h.daemon.configuration) == .applied(changes: []))
        var larger = h.daemon.configuration
        larger.maxQueuedBytes = 4 << 20
        _ = h.daemon.reload(larger)
        #expect(h.settle { h.store.pageCacheResizes == [1024] })
        var many = h.daemon.configuration
        many.maxQueuedBytes = 64 << 20
        _ = h.daemon.reload(many)
        #expect(h.settle { h.store.pageCacheResizes == [1024, 2000] })

        let memory = Harness(store: .memory)
        memory.startReady()
        var memoryLarger = memory.daemon.configuration
        memoryLarger.maxQueuedBytes = 4 << 20
        #expect(memory.daemon.reload(memoryLarger) == .applied(changes: ["max_queued_bytes default→4194304"]))
        memory.spin()
        #expect(memory.store.pageCacheResizes.isEmpty)
    }

    @Test func moreThenFewerConnectionsWithoutDroppingAMessage() throws {
        let h = Harness()
        h.startReady()
        let ids = (0..<150).map { "r-\($0)" }
        h.submit(ids)
        #expect(h.settle { h.sentDownstream().count == 100 })  // connection 1's window; 50 wait

        var more = h.daemon.configuration
        more.connections = 2
        #expect(h.daemon.reload(more) == .applied(changes: ["connections 1→2"]))
        #expect(h.settle { h.factory.made.count == 2 })
        let second = h.factory.made[1]
        second.deliverReady()
        #expect(h.settle { Self.downstreamIDs(second).count == 50 })

        var fewer = h.daemon.configuration
        fewer.connections = 1
        #expect(h.daemon.reload(fewer) == .applied(changes: ["connections 2→1"]))
        h.spin()
        #expect(second.closeCalls == 0, "closed with messages in flight")
        let onSecond = Self.downstreamIDs(second)
        for id in onSecond.dropLast() { Self.ack(id, on: second) }
        h.spin()
        #expect(second.closeCalls == 0)
        Self.ack(onSecond.last!, on: second)
        #expect(h.settle { second.closeCalls == 1 })
        for id in Self.downstreamIDs(h.connection) { Self.ack(id, on: h.connection) }
        #expect(h.settle { h.events("acked").count == 150 })
        let acked = h.events("acked").compactMap { $0["message_id"]?.stringValue }
        #expect(Set(acked) == Set(ids) && acked.count == 150)
        #expect(h.factory.made.count == 2)  // the closed connection was not replaced
        #expect(h.daemon.snapshot().connections.map(\.id) == [1])
        #expect(h.exited == nil)
    }

    @Test func aRefusedReloadKeepsTheRunningConfiguration() {
        let h = Harness()
        h.startReady()
        var moved = h.daemon.configuration
        moved.senderID = "999"
        moved.connections = 3
        guard case .refused(let reason) = h.daemon.reload(moved) else {
            Issue.record("not refused")
            return
        }
        #expect(reason.contains("sender_id"))
        h.spin()
        #expect(h.daemon.configuration.senderID == "123456789012")
        #expect(h.daemon.configuration.connections == 1)
        #expect(h.factory.made.count == 1)
    }

    @Test func keyCAFileAndLogLevelApplyToWhatComesNext() {
        let h = Harness()
        h.startReady()
        var rotated = h.daemon.configuration
        rotated.serverKey = Secret("AAAA-rotated-key")
        rotated.caFile = "/etc/ccsd/new-ca.pem"
        rotated.logLevel = .debug
        rotated.shutdownGraceSeconds = 7
        let result = h.daemon.reload(rotated)
        #expect(result == .applied(changes: [
            "server key rotated (new connections)", "ca_file system CA store→/etc/ccsd/new-ca.pem (new connections)",
            "shutdown_grace_seconds 2→7 (next stop)", "log_level info→debug",
        ]))
        let client = CCSDaemon.clientConfiguration(for: rotated.primaryEndpoint, h.daemon.configuration)
        #expect(client.credentials.password.revealed == "AAAA-rotated-key")
        #expect(client.tls.caFile == "/etc/ccsd/new-ca.pem")
        #expect(h.daemon.logger.minimum == .debug)
        #expect(h.daemon.lifecycle.configuration.shutdownGrace == .seconds(7))
        #expect(h.factory.made.count == 1 && h.connection.closeCalls == 0)  // the open connection is kept
    }

    @Test func aReloadWhileStoppingIsRefused() {
        let h = Harness()
        h.startReady()
        h.submit(["s-1"])
        #expect(h.settle { h.sentDownstream().count == 1 })
        h.daemon.signal(.terminate)
        var more = h.daemon.configuration
        more.connections = 2
        #expect(h.daemon.reload(more) == .refused(reason: "ccsd is stopping: a reload applies only while it runs"))
        #expect(h.daemon.configuration.connections == 1)
    }
}

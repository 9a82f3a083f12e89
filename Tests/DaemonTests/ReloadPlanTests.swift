import CCS
import Testing
import XMPP
@testable import Daemon

/// `ReloadPlan`: old and new configuration in, the changes or a refusal out. No daemon, no sockets.
@Suite struct ReloadPlanTests {
    static func base() -> Configuration {
        var configuration = Configuration()
        configuration.senderID = "123456789012"
        configuration.serverKey = Secret("AAAA-old-server-key")
        configuration.stateDirectory = "/var/lib/ccsd"
        return configuration
    }

    @Test func nothingChangedIsAnEmptyPlan() throws {
        let plan = try ReloadPlan(from: Self.base(), to: Self.base())
        #expect(plan.changes.isEmpty)
        #expect(plan.connectionsChange == nil)
    }

    @Test func liveSettingsAreListedWithTheirValues() throws {
        var new = Self.base()
        new.connections = 4
        new.maxAttempts = 3
        new.retryBackoff.cap = 30
        new.window = 50
        new.caFile = "/etc/ccsd/ca.pem"
        new.shutdownGraceSeconds = 20.5
        new.logLevel = .debug
        let plan = try ReloadPlan(from: Self.base(), to: new)
        #expect(plan.changes == [
            "connections 1→4", "max_attempts 5→3", "retry_max_seconds 60→30",
            "ca_file system CA store→/etc/ccsd/ca.pem (new connections)", "window 100→50 (new connections)",
            "shutdown_grace_seconds 10→20.5 (next stop)", "log_level info→debug",
        ])
        #expect(plan.connectionsChange?.from == 1 && plan.connectionsChange?.to == 4)
    }

    @Test func aRotatedServerKeyIsAppliedAndNeverShown() throws {
        var new = Self.base()
        new.serverKey = Secret("AAAA-new-server-key")
        let plan = try ReloadPlan(from: Self.base(), to: new)
        #expect(plan.changes == ["server key rotated (new connections)"])
        #expect(!plan.changes.joined().contains("AAAA"))
    }

    @Test func everySettingThatCannotChangeLiveIsRefusedByName() {
        let changes: [(String, (inout Configuration) -> Void)] = [
            ("sender_id", { $0.senderID = "999" }),
            ("jid_domain", { $0.jidDomain = "fcm.example" }),
            ("primary_endpoint", { $0.primaryEndpoint = Endpoint(host: "other", port: 5235) }),
            ("secondary_endpoint", { $0.secondaryEndpoint = nil }),
            ("state_dir", { $0.stateDirectory = "/srv/ccsd" }),
            ("store", { $0.store = .memory }),
            ("store_synchronous", { $0.storeSynchronous = .normal }),
            ("final_retention_seconds", { $0.finalRetentionSeconds = 60 }),
            ("events_retention_seconds", { $0.eventsRetentionSeconds = 60 }),
            ("upstream_dedupe_seconds", { $0.upstreamDedupeSeconds = 60 }),
        ]
        for (field, change) in changes {
            var new = Self.base()
            new.connections = 3  // a live change alongside does not slip through
            change(&new)
            #expect(throws: ConfigurationError.self, "\(field)") { try ReloadPlan(from: Self.base(), to: new) }
            do {
                _ = try ReloadPlan(from: Self.base(), to: new)
            } catch {
                #expect(error.field == field)
                #expect(error.rule.contains("cannot change while ccsd runs"))
                #expect(error.rule.contains("restart"))
            }
        }
    }

    @Test func severalRefusedSettingsAreAllNamedAndValuesNotEchoed() {
        var new = Self.base()
        new.senderID = "987654321"
        new.store = .memory
        do {
            _ = try ReloadPlan(from: Self.base(), to: new)
            Issue.record("not refused")
        } catch {
            #expect(error.field == "sender_id, store")
            #expect(!error.description.contains("987654321"))
        }
    }

    @Test func aConfigurationBreakingARuleIsRefusedWithTheRule() {
        var new = Self.base()
        new.deadPeerSeconds = 10  // not above keepalive_seconds (30)
        do {
            _ = try ReloadPlan(from: Self.base(), to: new)
            Issue.record("not refused")
        } catch {
            #expect(error.field == "dead_peer_seconds")
        }
        var keyless = Self.base()
        keyless.serverKey = Secret("")
        #expect(throws: ConfigurationError(field: "server_key", rule: "required: set server_key_file, --server-key-file, or CCSD_SERVER_KEY")) {
            try ReloadPlan(from: Self.base(), to: keyless)
        }
    }
}

import CCS

/// What a reload (SIGHUP) does with a new configuration: the changes to apply, or a refusal. Pure: two
/// configurations in, a plan or a `ConfigurationError` out; `CCSDaemon.reload(_:)` applies the plan.
///
/// | settings | when a reload applies them |
/// |---|---|
/// | `connections` | at once: connections open, or close gracefully (no new sends; closed once their messages in flight are answered, or after `drain_timeout_seconds`, when what is left is resent) |
/// | `max_queued`, `max_queued_bytes`, `max_pending_upstream`, `max_event_backlog` | at once (intake, or reading a connection, pauses at it and resumes at half) |
/// | `max_attempts`, the retry, rate-limit and reconnect backoffs, `healthy_connection_seconds`, `ack_timeout_seconds`, `drain_timeout_seconds` | at once, from the next decision that reads them |
/// | the server key, `ca_file` (path or contents), `window`, `connect_timeout_seconds`, `handshake_timeout_seconds`, `login_timeout_seconds`, `keepalive_seconds`, `dead_peer_seconds`, `max_stanza_bytes`, `max_stanza_depth`, `max_stanza_attributes` | for connections opened from now on (open ones keep theirs) |
/// | `shutdown_grace_seconds`, `close_timeout_seconds`, `failure_close_timeout_seconds` | for the next stop |
/// | `log_level` | at once |
/// | `webhook_url`, `webhook_batch_size`, `webhook_timeout_seconds`, `webhook_token_file` | at once, by the serve command's webhook outlet (the URL is not echoed) |
/// | `sender_id`, `jid_domain`, `primary_endpoint`, `secondary_endpoint`, `state_dir`, `store`, `store_synchronous`, `final_retention_seconds`, `events_retention_seconds`, `upstream_dedupe_seconds`, `max_line_bytes` | never: refused, restart ccsd to change them |
///
/// Settings outside the daemon (the API's, the webhook's) are carried in the configuration unchanged by this
/// plan; their owners apply them after an `applied` reload.
public struct ReloadPlan: Sendable, Equatable {
    /// What changed, in the table's order, e.g. `connections 2→4`, `server key rotated (new connections)`.
    /// Values are shown except the server key's. Empty when nothing the daemon uses changed.
    public let changes: [String]
    /// The connection count changes (the pool opens or closes connections).
    public let connectionsChange: (from: Int, to: Int)?

    public static func == (a: ReloadPlan, b: ReloadPlan) -> Bool {
        a.changes == b.changes && a.connectionsChange?.from == b.connectionsChange?.from
            && a.connectionsChange?.to == b.connectionsChange?.to
    }

    /// One setting: its key and its value as shown in `changes`.
    struct Setting: Sendable {
        let key: String
        let value: @Sendable (Configuration) -> String
    }

    /// Settings a running daemon cannot take: the identity, the endpoints the slots are laid out over, the
    /// store and what the store and the deduplicator were opened with.
    static let fixed: [Setting] = [
        Setting(key: "sender_id") { $0.senderID },
        Setting(key: "jid_domain") { $0.jidDomain },
        Setting(key: "primary_endpoint") { $0.primaryEndpoint.description },
        Setting(key: "secondary_endpoint") { $0.secondaryEndpoint?.description ?? "null" },
        Setting(key: "state_dir") { $0.stateDirectory ?? "" },
        Setting(key: "store") { $0.store.rawValue },
        Setting(key: "store_synchronous") { $0.storeSynchronous.rawValue },
        Setting(key: "final_retention_seconds") { "\($0.finalRetentionSeconds)" },
        Setting(key: "events_retention_seconds") { "\($0.eventsRetentionSeconds)" },
        Setting(key: "upstream_dedupe_seconds") { "\($0.upstreamDedupeSeconds)" },
        // The intake reader thread took it at start.
        Setting(key: "max_line_bytes") { "\($0.maxLineBytes)" },
    ]

    /// Settings applied at once, for new connections, or for the next stop (suffix after the value).
    static let live: [(Setting, suffix: String)] = [
        (Setting(key: "connections") { "\($0.connections)" }, ""),
        (Setting(key: "max_queued") { "\($0.maxQueued)" }, ""),
        (Setting(key: "max_queued_bytes") { $0.maxQueuedBytes.map { "\($0)" } ?? "default" }, ""),
        (Setting(key: "max_pending_upstream") { "\($0.maxPendingUpstream)" }, ""),
        (Setting(key: "max_event_backlog") { "\($0.maxEventBacklog)" }, ""),
        (Setting(key: "max_attempts") { "\($0.maxAttempts)" }, ""),
        (Setting(key: "retry_initial_seconds") { seconds($0.retryBackoff.base) }, ""),
        (Setting(key: "retry_max_seconds") { seconds($0.retryBackoff.cap) }, ""),
        (Setting(key: "rate_limit_initial_seconds") { seconds($0.rateLimitBackoff.base) }, ""),
        (Setting(key: "rate_limit_max_seconds") { seconds($0.rateLimitBackoff.cap) }, ""),
        (Setting(key: "reconnect_initial_seconds") { seconds($0.reconnectBackoff.base) }, ""),
        (Setting(key: "reconnect_max_seconds") { seconds($0.reconnectBackoff.cap) }, ""),
        (Setting(key: "refused_reconnect_initial_seconds") { seconds($0.refusedReconnectBackoff.base) }, ""),
        (Setting(key: "refused_reconnect_max_seconds") { seconds($0.refusedReconnectBackoff.cap) }, ""),
        (Setting(key: "healthy_connection_seconds") { seconds($0.healthyConnectionSeconds) }, ""),
        (Setting(key: "ack_timeout_seconds") { seconds($0.ackTimeoutSeconds) }, ""),
        (Setting(key: "drain_timeout_seconds") { seconds($0.drainTimeoutSeconds) }, ""),
        (Setting(key: "ca_file") { $0.caFile ?? "system CA store" }, " (new connections)"),
        (Setting(key: "window") { "\($0.window)" }, " (new connections)"),
        (Setting(key: "connect_timeout_seconds") { seconds($0.connectTimeoutSeconds) }, " (new connections)"),
        (Setting(key: "handshake_timeout_seconds") { seconds($0.handshakeTimeoutSeconds) }, " (new connections)"),
        (Setting(key: "login_timeout_seconds") { seconds($0.loginTimeoutSeconds) }, " (new connections)"),
        (Setting(key: "keepalive_seconds") { seconds($0.keepaliveSeconds) }, " (new connections)"),
        (Setting(key: "dead_peer_seconds") { seconds($0.deadPeerSeconds) }, " (new connections)"),
        (Setting(key: "max_stanza_bytes") { "\($0.maxStanzaBytes)" }, " (new connections)"),
        (Setting(key: "max_stanza_depth") { "\($0.maxStanzaDepth)" }, " (new connections)"),
        (Setting(key: "max_stanza_attributes") { "\($0.maxStanzaAttributes)" }, " (new connections)"),
        (Setting(key: "shutdown_grace_seconds") { seconds($0.shutdownGraceSeconds) }, " (next stop)"),
        (Setting(key: "close_timeout_seconds") { seconds($0.closeTimeoutSeconds) }, " (next stop)"),
        (Setting(key: "failure_close_timeout_seconds") { seconds($0.failureCloseTimeoutSeconds) }, " (next stop)"),
        (Setting(key: "log_level") { $0.logLevel.description }, ""),
        (Setting(key: "webhook_batch_size") { "\($0.webhookBatchSize)" }, " (webhook)"),
        (Setting(key: "webhook_timeout_seconds") { seconds($0.webhookTimeoutSeconds) }, " (webhook)"),
        (Setting(key: "webhook_token_file") { $0.webhookTokenFile ?? "none" }, " (webhook)"),
    ]

    /// Plans the move from the running configuration `old` to `new`.
    /// - Throws: `ConfigurationError` when `new` breaks a rule (`validateForRun`), or when it changes a setting
    ///   that cannot change while ccsd runs: `field` names every such key, the rule says to restart. The
    ///   refused values are not echoed (a server key pasted into `sender_id` must not reach the log).
    public init(from old: Configuration, to new: Configuration) throws(ConfigurationError) {
        try new.validateForRun()
        let refused = Self.fixed.filter { $0.value(old) != $0.value(new) }.map(\.key)
        if !refused.isEmpty {
            throw ConfigurationError(
                field: refused.joined(separator: ", "),
                rule: "cannot change while ccsd runs; the running configuration is kept (restart ccsd to apply \(refused.count == 1 ? "it" : "them"))")
        }
        var changes: [String] = []
        for (setting, suffix) in Self.live {
            let (before, after) = (setting.value(old), setting.value(new))
            if before != after { changes.append("\(setting.key) \(before)→\(after)\(suffix)") }
        }
        if old.serverKey != new.serverKey {
            changes.insert("server key rotated (new connections)", at: changes.firstIndex { $0.hasPrefix("ca_file") || $0.hasPrefix("window") } ?? changes.endIndex)
        }
        if old.webhookURL != new.webhookURL {
            // Not echoed: a URL may carry credentials (user info, query).
            changes.append("webhook_url \(old.webhookURL == nil ? "off" : "set")→\(new.webhookURL == nil ? "off" : "changed") (webhook)")
        }
        self.changes = changes
        self.connectionsChange = old.connections == new.connections ? nil : (old.connections, new.connections)
    }

    /// `2`, `0.5`: seconds without a needless `.0`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? "\(Int(value))" : "\(value)"
    }
}

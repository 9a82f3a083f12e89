import CCS
import Store
import TLS
import XMLStream
import XMPP

/// SIGHUP: reload the configuration without dropping a message (`ReloadPlan` says what applies and when).
extension CCSDaemon {
    /// What a reload did.
    public enum ReloadResult: Sendable, Equatable {
        /// Applied; `changes` names what changed (e.g. `connections 2→4`), empty when nothing did.
        case applied(changes: [String])
        /// Refused; the running configuration is kept. `reason` names the field and the rule.
        case refused(reason: String)
    }

    /// Applies `configuration` to the running daemon: the pool's connection count and policy, the bounds of
    /// the next stop, the log level at once; the server key, CA file, window and connection timeouts for
    /// connections opened from now on. Refused (nothing changes, one error line is logged) when the new
    /// configuration breaks a rule, changes a setting that cannot change live (`ReloadPlan`), or ccsd is
    /// stopping. Call on the loop.
    public func reload(_ configuration: Configuration) -> ReloadResult {
        switch lifecycle.state {
        case .idle, .starting, .running: break
        case .stopping, .closing, .stopped:
            logger.error("configuration reload refused: ccsd is stopping; the running configuration is kept")
            return .refused(reason: "ccsd is stopping: a reload applies only while it runs")
        }
        let plan: ReloadPlan
        do throws(ConfigurationError) {
            plan = try ReloadPlan(from: self.configuration, to: configuration)
        } catch {
            logger.error("configuration reload refused; the running configuration is kept",
                         ["field": error.field, "error": error.rule])
            return .refused(reason: error.description)
        }
        let pageCacheBefore = self.configuration.storePageCacheKiB
        self.configuration = configuration
        resizePageCacheIfNeeded(from: pageCacheBefore)
        logger.addSecrets(configuration.credentials)
        logger.setMinimum(configuration.logLevel)
        lifecycle.configuration = configuration.lifecycleConfiguration(exitWhenDone: lifecycle.configuration.exitWhenDone)
        perform(dispatcher.reconfigure(configuration.dispatcherConfiguration, now: now()))
        checkEventBacklog()
        logger.info("configuration reloaded", ["changes": plan.changes.isEmpty ? "none" : plan.changes.joined(separator: "; ")])
        return .applied(changes: plan.changes)
    }

    /// A reload that changes the intake byte bound (`max_queued_bytes`, or its default through `connections`
    /// and `window`) resizes SQLite's page cache with it (`Configuration.storePageCacheKiB`), on the writer's
    /// queue between commits: 512 KiB held by a pool grown from one connection to 1,000 cost about a fifth of
    /// its throughput. A failure is logged; the cache keeps its size and nothing else changes.
    private func resizePageCacheIfNeeded(from before: Int) {
        let kib = configuration.storePageCacheKiB
        guard kib != before, configuration.store == .sqlite else { return }
        let logger = logger
        writer.read({ store throws(StoreError) in try store.setPageCache(kib: kib) }) { result in
            if case .failure(let error) = result {
                logger.warning("the store's page cache was not resized; it keeps its size",
                               ["kib": "\(kib)", "error": "\(error)"])
            }
        }
    }

    /// The XMPP client settings for a new connection to `endpoint` under `configuration`: credentials (sender
    /// ID, server key, JID domain), TLS (CA file, connect and handshake timeouts), stanza limit, login
    /// timeout, keepalive. The real connection factory asks this with the daemon's current configuration,
    /// so a reload's key, CA file and timeouts reach every connection opened after it.
    public static func clientConfiguration(for endpoint: Endpoint, _ configuration: Configuration) -> XMPPClientConfiguration {
        let tls = TLSClientConfiguration(caFile: configuration.caFile, connectTimeout: configuration.connectTimeoutSeconds,
                                         handshakeTimeout: configuration.handshakeTimeoutSeconds)
        return XMPPClientConfiguration(
            host: endpoint.host, port: endpoint.port, credentials: configuration.credentials, tls: tls,
            limits: XMLStreamLimits(maxStanzaBytes: configuration.maxStanzaBytes, maxDepth: configuration.maxStanzaDepth,
                                    maxAttributes: configuration.maxStanzaAttributes),
            loginTimeout: configuration.loginTimeoutSeconds, keepaliveInterval: configuration.keepaliveSeconds,
            deadPeerTimeout: configuration.deadPeerSeconds)
    }
}

extension Configuration {
    /// The XMPP login: sender ID, server key, JID domain (ccs-protocol.md §2).
    public var credentials: XMPPCredentials {
        XMPPCredentials(username: senderID, password: serverKey, jidDomain: jidDomain)
    }
}

/// The daemon a connection factory asks for the current configuration (made before the daemon exists).
final class DaemonReference {
    weak var daemon: CCSDaemon?
}

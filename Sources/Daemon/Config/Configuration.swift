import CCS
import XMPP
import FoundationEssentials
import Glibc

/// ccsd's settings: a JSON file in `config/`, then command-line flags on top.
///
/// File keys (all optional but `sender_id`; unknown keys are errors, with a suggestion when close):
///
/// | key | type | default |
/// |---|---|---|
/// | `sender_id` | string of digits | — |
/// | `server_key_file` | path | — (else `CCSD_SERVER_KEY`) |
/// | `jid_domain` | string | `gcm.googleapis.com` |
/// | `primary_endpoint` | `HOST:PORT` | `fcm-xmpp.googleapis.com:5235` |
/// | `secondary_endpoint` | `HOST:PORT` or null | `fcm-xmpp.googleapis.com:5236` |
/// | `ca_file` | path or null | system CA store |
/// | `connections` | integer 1…1000 | 1 |
/// | `window` | integer 1…100 | 100 |
/// | `max_attempts` | integer 1…100 | 5 |
/// | `retry_initial_seconds`, `retry_max_seconds` | number > 0 | 1, 60 |
/// | `rate_limit_initial_seconds`, `rate_limit_max_seconds` | number > 0 | 1, 300 |
/// | `reconnect_initial_seconds`, `reconnect_max_seconds` | number > 0 | 1, 60 (after a failed or short-lived connection) |
/// | `refused_reconnect_initial_seconds`, `refused_reconnect_max_seconds` | number > 0 | 300, 3600 (after a stream error reconnecting cannot heal, e.g. `host-unknown`) |
/// | `healthy_connection_seconds` | number > 0 | 10 (a connection that drops sooner counts as failed and backs off) |
/// | `upstream_dedupe_seconds` | number > 0 | 600 |
/// | `connect_timeout_seconds`, `handshake_timeout_seconds`, `login_timeout_seconds` | number > 0 | 10, 10, 20 |
/// | `keepalive_seconds`, `dead_peer_seconds` | number > 0, dead > keepalive | 30, 90 |
/// | `max_stanza_bytes` | integer 1024…16777216 | 1048576 |
/// | `max_stanza_depth` | integer 2…256 | 32 (RFC 6120 depth: 1 = a stanza) |
/// | `max_stanza_attributes` | integer 8…1024 | 64 (per start tag, namespace declarations included) |
/// | `max_line_bytes` | integer 1024…16777216 | 65536 (longest intake line) |
/// | `max_queued` | integer 1…10000000 | 20000 (outstanding messages above which intake pauses) |
/// | `max_queued_bytes` | integer 65536…1073741824 | connections × window × 1024, at least 1048576 (weight of the outstanding messages, JSON text plus 1 KiB each, above which intake pauses) |
/// | `max_pending_upstream` | integer 1…100000 | 1000 (ACKs owed on one connection above which ccsd stops reading it) |
/// | `max_event_backlog` | integer 1…100000000 | 1000000 (events not acknowledged by the slowest consumer at which new downstream messages wait) |
/// | `shutdown_grace_seconds` | number > 0 | 10 (on SIGTERM: time to finish outstanding messages) |
/// | `ack_timeout_seconds` | number > 0 | 60 (a connection resolving nothing that long is dropped, its messages resent) |
/// | `drain_timeout_seconds` | number > 0 | 300 (a draining stream the server has not closed by then is closed by ccsd) |
/// | `close_timeout_seconds` | number > 0 | 3 (after a graceful stop: time for the streams to close before they are aborted) |
/// | `failure_close_timeout_seconds` | number > 0 | 1 (the same after authentication, outlet or store failure) |
/// | `state_dir` | path | `$STATE_DIRECTORY` (its first entry), else `/var/lib/ccsd` (where the SQLite store lives) |
/// | `store` | `"sqlite"` or `"memory"` | `"sqlite"` (memory: nothing survives a restart; tests, benchmarks) |
/// | `store_synchronous` | `"full"` or `"normal"` | `"full"` (SQLite `PRAGMA synchronous`: full survives a power cut, normal only a crash of ccsd) |
/// | `final_retention_seconds` | number > 0 | 86400 (final messages kept to answer a resubmitted message_id with its outcome) |
/// | `events_retention_seconds` | number > 0 | 604800 (journaled events kept at most this long, acknowledged or not) |
/// | `log_level` | `"debug"`, `"info"`, `"warning"` or `"error"` | `"info"` (`--log-level` overrides it) |
///
/// The server key comes from `--server-key-file`, else the `CCSD_SERVER_KEY` environment variable, else the
/// systemd credential `server-key` (`$CREDENTIALS_DIRECTORY/server-key`, from `LoadCredential=`), else
/// `server_key_file`. It is held as a `Secret` and never printed.
public struct Configuration: Sendable {
    public var senderID = ""
    public var serverKey = Secret("")
    public var serverKeyFile: String?
    public var jidDomain = "gcm.googleapis.com"
    public var primaryEndpoint = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5235)
    public var secondaryEndpoint: Endpoint? = Endpoint(host: "fcm-xmpp.googleapis.com", port: 5236)
    public var caFile: String?
    public var connections = 1
    public var window = FlowWindow.maximum
    public var maxAttempts = 5
    public var retryBackoff = Backoff(base: 1, cap: 60)
    public var rateLimitBackoff = Backoff(base: 1, cap: 300)
    public var reconnectBackoff = Backoff(base: 1, cap: 60)
    /// Backoff after a stream error reconnecting cannot heal (`XMPPError.unhealableCondition`).
    public var refusedReconnectBackoff = Backoff(base: 300, cap: 3600)
    /// Seconds a connection must stay logged in for its drop to reconnect at once (`ReconnectPolicy`).
    public var healthyConnectionSeconds = ReconnectPolicy.defaultHealthyAfter
    public var upstreamDedupeSeconds = 600.0
    public var connectTimeoutSeconds = 10.0
    public var handshakeTimeoutSeconds = 10.0
    public var loginTimeoutSeconds = 20.0
    public var keepaliveSeconds = 30.0
    public var deadPeerSeconds = 90.0
    public var maxStanzaBytes = 1_048_576
    /// The deepest element a server may send (`XMLStreamLimits.maxDepth`).
    public var maxStanzaDepth = 32
    /// The most attributes one start tag from the server may carry (`XMLStreamLimits.maxAttributes`).
    public var maxStanzaAttributes = 64
    /// The longest intake line, bytes; a longer line is rejected (`line_too_long`) without being buffered.
    public var maxLineBytes = 65_536
    /// Outstanding messages (accepted, not final) above which intake stops reading until they fall to half.
    public var maxQueued = 20_000
    /// Bytes the outstanding messages may weigh (JSON text plus 1 KiB each for ccsd's bookkeeping) before
    /// intake stops reading until they weigh less than half; nil: `defaultMaxQueuedBytes`.
    public var maxQueuedBytes: Int?
    /// Upstream messages and receipts awaiting their record (ACKs owed) on one connection at which ccsd stops
    /// reading that connection, until they fall to half.
    public var maxPendingUpstream = 1000
    /// Journaled events not yet acknowledged by the slowest registered consumer at which new downstream
    /// messages wait (intake stops reading, the API answers 503), until they fall to half.
    public var maxEventBacklog = 1_000_000
    /// Seconds a SIGTERM waits for outstanding messages to finish before they end as `SHUTDOWN`.
    public var shutdownGraceSeconds = 10.0
    /// Seconds a sent message may wait for its ack or nack before its connection counts as broken.
    public var ackTimeoutSeconds = 60.0
    /// Seconds a draining connection may stay open before ccsd closes it.
    public var drainTimeoutSeconds = 300.0
    /// Seconds the streams get to close after a graceful stop before they are aborted.
    public var closeTimeoutSeconds = 3.0
    /// Seconds the streams get to close after a failure (authentication, events outlet, store).
    public var failureCloseTimeoutSeconds = 1.0
    /// The directory of the SQLite store, as the file or a flag set it; nil means the default
    /// (`defaultStateDirectory(environment:)`), which `RunOptions.configuration(environment:)` fills in.
    public var stateDirectory: String?
    /// Which store keeps accepted messages.
    public var store = StoreKind.sqlite
    /// SQLite's `PRAGMA synchronous` for the store.
    public var storeSynchronous = StoreSynchronous.full
    /// Seconds a final message is kept so that a resubmitted message_id is answered with its stored outcome.
    public var finalRetentionSeconds = 86_400.0
    /// Seconds a journaled event is kept at most, whether or not a consumer acknowledged it.
    public var eventsRetentionSeconds = 604_800.0
    /// The lowest log level written (`log_level`; a reload changes it while ccsd runs).
    public var logLevel = Logger.Level.info
    /// Where the webhook outlet POSTs event batches (`http://` or `https://`); nil: no webhook.
    public var webhookURL: String?
    /// Events per webhook POST, at most.
    public var webhookBatchSize = 100
    /// Seconds one webhook POST may take (connecting included) before it counts as failed and is retried.
    public var webhookTimeoutSeconds = 10.0
    /// A file holding the bearer token sent as `Authorization: Bearer …` with each webhook POST.
    public var webhookTokenFile: String?

    public init() {}

    /// The endpoints in order: primary, then secondary when set and different.
    public var endpoints: [Endpoint] {
        if let secondaryEndpoint, secondaryEndpoint != primaryEndpoint { return [primaryEndpoint, secondaryEndpoint] }
        return [primaryEndpoint]
    }

    /// Which store keeps accepted messages (`--store`, `store`).
    public enum StoreKind: String, Sendable, Equatable, CaseIterable {
        /// SQLite in the state directory: what was accepted survives a restart.
        case sqlite
        /// In memory: nothing survives a restart (tests, benchmarks).
        case memory
    }

    /// SQLite's `PRAGMA synchronous` (https://sqlite.org/pragma.html#pragma_synchronous) in WAL mode.
    public enum StoreSynchronous: String, Sendable, Equatable, CaseIterable {
        /// Every commit is synced: an `accepted` the submitter saw survives a power cut.
        case full
        /// Commits are synced at WAL checkpoints: they survive a crash of ccsd (kill -9), not a power cut.
        case normal
    }

    /// The state directory when neither `--state-dir` nor `state_dir` set one: `$STATE_DIRECTORY` (systemd's
    /// `StateDirectory=`; with several directories it is a colon-separated list, and the first is taken),
    /// else `/var/lib/ccsd`.
    public static func defaultStateDirectory(environment: [String: String]) -> String {
        let first = environment["STATE_DIRECTORY"]?.split(separator: ":", omittingEmptySubsequences: true).first
        return first.map(String.init) ?? "/var/lib/ccsd"
    }

    /// The lifecycle's bounds and mode.
    public func lifecycleConfiguration(exitWhenDone: Bool) -> DaemonLifecycle.Configuration {
        DaemonLifecycle.Configuration(
            shutdownGrace: .seconds(shutdownGraceSeconds), closeTimeout: .seconds(closeTimeoutSeconds),
            failureCloseTimeout: .seconds(failureCloseTimeoutSeconds), exitWhenDone: exitWhenDone,
            durability: store == .sqlite ? .durable : .memory)
    }

    /// The pool settings for the dispatcher.
    public var dispatcherConfiguration: DispatcherConfiguration {
        DispatcherConfiguration(
            endpoints: endpoints, connections: connections, window: window, maxAttempts: maxAttempts,
            retryBackoff: retryBackoff, rateLimitBackoff: rateLimitBackoff, reconnectBackoff: reconnectBackoff,
            upstreamDedupeWindow: upstreamDedupeSeconds, ackTimeout: ackTimeoutSeconds,
            drainTimeout: drainTimeoutSeconds, refusedReconnectBackoff: refusedReconnectBackoff,
            healthyConnectionSeconds: healthyConnectionSeconds)
    }
}

/// A configuration problem: the key or flag, the rule, and the value (never the server key).
///
/// A configuration file is checked whole: when it has several problems, the first is `field`/`rule` and the
/// others follow in `further`, in the order found (`problems` lists them all; `description` gives one line
/// each).
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var rule: String
    /// The problems found after this one in the same check, in order (empty for a single problem).
    public var further: [ConfigurationError] = []

    public init(field: String, rule: String) {
        self.field = field
        self.rule = rule
    }

    /// One error for every problem in `problems` (the first leads); nil when there is none.
    public init?(combining problems: [ConfigurationError]) {
        guard let first = problems.first else { return nil }
        self.init(field: first.field, rule: first.rule)
        further = problems.dropFirst().flatMap(\.problems)
    }

    /// Every problem, this one first.
    public var problems: [ConfigurationError] {
        [ConfigurationError(field: field, rule: rule)] + further.flatMap(\.problems)
    }

    /// `configuration error: FIELD: RULE`, one line per problem.
    public var description: String {
        problems.map { "configuration error: \($0.field): \($0.rule)" }.joined(separator: "\n")
    }
}

extension Configuration {
    static let knownKeys = [
        "sender_id", "server_key_file", "jid_domain", "primary_endpoint", "secondary_endpoint", "ca_file",
        "connections", "window", "max_attempts", "retry_initial_seconds", "retry_max_seconds",
        "rate_limit_initial_seconds", "rate_limit_max_seconds", "reconnect_initial_seconds", "reconnect_max_seconds",
        "upstream_dedupe_seconds", "connect_timeout_seconds", "handshake_timeout_seconds", "login_timeout_seconds",
        "keepalive_seconds", "dead_peer_seconds", "max_stanza_bytes", "max_stanza_depth", "max_stanza_attributes",
        "max_line_bytes", "max_queued", "max_queued_bytes", "max_pending_upstream", "max_event_backlog",
        "shutdown_grace_seconds",
        "ack_timeout_seconds", "drain_timeout_seconds", "refused_reconnect_initial_seconds",
        "refused_reconnect_max_seconds", "healthy_connection_seconds", "close_timeout_seconds",
        "failure_close_timeout_seconds", "state_dir", "store", "store_synchronous", "final_retention_seconds",
        "events_retention_seconds", "log_level",
        "webhook_url", "webhook_batch_size", "webhook_timeout_seconds", "webhook_token_file",
    ]

    /// Reads a configuration file's JSON text over the defaults.
    /// - Throws: `ConfigurationError` naming the key and the rule, with every other problem of the file in
    ///   `further` (unknown keys, invalid values, cross-field rules: see `problems(applyingFileContents:path:)`).
    public mutating func apply(fileContents: Data, path: String) throws(ConfigurationError) {
        if let error = ConfigurationError(combining: problems(applyingFileContents: fileContents, path: path)) {
            throw error
        }
    }

    /// Reads a configuration file's JSON text over the defaults, taking every valid key, and returns every
    /// problem: the file is not one JSON object (then nothing else is checked), each unknown key (with the
    /// nearest known key when it is a likely typo), each invalid value, and each cross-field rule broken
    /// (`validationProblems`) among keys whose values were valid. Empty when the file is good.
    public mutating func problems(applyingFileContents fileContents: Data, path: String) -> [ConfigurationError] {
        let object: [String: JSONValue]
        // Numbers as written, by top-level key: an error quotes `3.0` or `1e400`, not the value read from it.
        var written: [String: String] = [:]
        var unreadable: [JSONTokenScan.Token] = []
        do throws(JSONValue.ParseError) {
            let parsed: JSONValue
            do {
                parsed = try JSONValue.parse(fileContents)
            } catch {
                // A number no Double holds (`1e400`) makes the whole text unreadable: read it as
                // null instead, so that its key and rule are named with every other problem of the file.
                let lenient = try JSONValue.parseReplacingUnrepresentableNumbers(fileContents)
                guard !lenient.replaced.isEmpty else { throw error }
                parsed = lenient.value
                unreadable = lenient.replaced
            }
            guard let parsed = parsed.objectValue else {
                return [ConfigurationError(field: path, rule: "the file must hold one JSON object")]
            }
            object = parsed
        } catch {
            // The reason and position, never the text itself: a server key pasted into the file must
            // not reach the terminal.
            return [ConfigurationError(field: path, rule: Self.withPosition(error, in: fileContents))]
        }
        JSONTokenScan.scan([UInt8](fileContents)) { token in
            if token.kind == .number, token.path.count == 1, let key = token.path[0], written[key] == nil {
                written[key] = token.text
            }
            return true
        }
        var problems: [ConfigurationError] = []
        var invalid: Set<String> = []
        for key in object.keys.sorted() {
            guard Configuration.knownKeys.contains(key) else {
                let suggestion = Configuration.closestKey(to: key).map { " (did you mean \($0)?)" } ?? ""
                problems.append(ConfigurationError(field: Configuration.shown(key), rule: "unknown key\(suggestion)"))
                continue
            }
            let value = object[key]!
            do {
                try apply(key: key, value: value)
            } catch {
                var error = error
                let read = "got " + Self.describe(value)
                if let text = written[key], error.rule.hasSuffix(read) {
                    error.rule = String(error.rule.dropLast(read.count)) + "got " + Self.shortened(text)
                }
                problems.append(error)
                invalid.insert(key)
                continue
            }
            // A known key whose value held an unreadable number deeper down (no key takes one today).
            for token in unreadable where token.path.first == key && token.path.count > 1 {
                problems.append(ConfigurationError(field: token.dottedPath ?? key, rule: "must be a number a 64-bit float holds, got \(Self.shortened(token.text))"))
                invalid.insert(key)
            }
        }
        return problems + validationProblems(skipping: invalid)
    }

    /// The parse error's message with where the text breaks (or ends, for a text cut short) as a line and
    /// column: "at byte 12" gains "(line 2, column 5)".
    static func withPosition(_ error: JSONValue.ParseError, in text: Data) -> String {
        guard let offset = error.offset else { return error.message }
        let before = text.prefix(max(0, min(offset, text.count)))
        let line = before.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 - before.startIndex + 1 } ?? 0) + 1
        return error.message + " (line \(line), column \(column))"
    }

    /// Written text for an error message, shortened past 60 characters.
    static func shortened(_ text: String) -> String {
        text.count > 60 ? String(text.prefix(57)) + "..." : text
    }

    private mutating func apply(key: String, value: JSONValue) throws(ConfigurationError) {
        switch key {
        case "sender_id": senderID = try Self.string(key, value)
        case "server_key_file": serverKeyFile = try Self.string(key, value)
        case "jid_domain": jidDomain = try Self.string(key, value)
        case "primary_endpoint": primaryEndpoint = try Self.endpoint(key, value)
        case "secondary_endpoint": secondaryEndpoint = value == .null ? nil : try Self.endpoint(key, value)
        case "ca_file": caFile = value == .null ? nil : try Self.string(key, value)
        case "connections": connections = try Self.integer(key, value, 1...1000)
        case "window": window = try Self.integer(key, value, 1...FlowWindow.maximum)
        case "max_attempts": maxAttempts = try Self.integer(key, value, 1...100)
        case "retry_initial_seconds": retryBackoff.base = try Self.seconds(key, value)
        case "retry_max_seconds": retryBackoff.cap = try Self.seconds(key, value)
        case "rate_limit_initial_seconds": rateLimitBackoff.base = try Self.seconds(key, value)
        case "rate_limit_max_seconds": rateLimitBackoff.cap = try Self.seconds(key, value)
        case "reconnect_initial_seconds": reconnectBackoff.base = try Self.seconds(key, value)
        case "reconnect_max_seconds": reconnectBackoff.cap = try Self.seconds(key, value)
        case "upstream_dedupe_seconds": upstreamDedupeSeconds = try Self.seconds(key, value)
        case "connect_timeout_seconds": connectTimeoutSeconds = try Self.seconds(key, value)
        case "handshake_timeout_seconds": handshakeTimeoutSeconds = try Self.seconds(key, value)
        case "login_timeout_seconds": loginTimeoutSeconds = try Self.seconds(key, value)
        case "keepalive_seconds": keepaliveSeconds = try Self.seconds(key, value)
        case "dead_peer_seconds": deadPeerSeconds = try Self.seconds(key, value)
        case "max_stanza_bytes": maxStanzaBytes = try Self.integer(key, value, 1024...16_777_216)
        case "max_stanza_depth": maxStanzaDepth = try Self.integer(key, value, 2...256)
        case "max_stanza_attributes": maxStanzaAttributes = try Self.integer(key, value, 8...1024)
        case "max_line_bytes": maxLineBytes = try Self.integer(key, value, 1024...16_777_216)
        case "max_queued": maxQueued = try Self.integer(key, value, 1...10_000_000)
        case "max_queued_bytes": maxQueuedBytes = try Self.integer(key, value, 65_536...1_073_741_824)
        case "max_pending_upstream": maxPendingUpstream = try Self.integer(key, value, 1...100_000)
        case "max_event_backlog": maxEventBacklog = try Self.integer(key, value, 1...100_000_000)
        case "shutdown_grace_seconds": shutdownGraceSeconds = try Self.seconds(key, value)
        case "ack_timeout_seconds": ackTimeoutSeconds = try Self.seconds(key, value)
        case "drain_timeout_seconds": drainTimeoutSeconds = try Self.seconds(key, value)
        case "refused_reconnect_initial_seconds": refusedReconnectBackoff.base = try Self.seconds(key, value)
        case "refused_reconnect_max_seconds": refusedReconnectBackoff.cap = try Self.seconds(key, value)
        case "healthy_connection_seconds": healthyConnectionSeconds = try Self.seconds(key, value)
        case "close_timeout_seconds": closeTimeoutSeconds = try Self.seconds(key, value)
        case "failure_close_timeout_seconds": failureCloseTimeoutSeconds = try Self.seconds(key, value)
        case "state_dir": stateDirectory = try Self.string(key, value)
        case "store": store = try Self.choice(key, value)
        case "store_synchronous": storeSynchronous = try Self.choice(key, value)
        case "final_retention_seconds": finalRetentionSeconds = try Self.seconds(key, value)
        case "events_retention_seconds": eventsRetentionSeconds = try Self.seconds(key, value)
        case "log_level":
            guard let name = value.stringValue, let level = Logger.Level(name: name) else {
                throw ConfigurationError(field: key, rule: "must be \"debug\", \"info\", \"warning\" or \"error\", got \(Self.describe(value))")
            }
            logLevel = level
        case "webhook_url": webhookURL = value == .null ? nil : try Self.webhookURL(key, value)
        case "webhook_batch_size": webhookBatchSize = try Self.integer(key, value, 1...10_000)
        case "webhook_timeout_seconds": webhookTimeoutSeconds = try Self.seconds(key, value)
        case "webhook_token_file": webhookTokenFile = value == .null ? nil : try Self.string(key, value)
        default: throw ConfigurationError(field: key, rule: "unknown key")
        }
    }

    /// Cross-field rules; run after the file and again after the flags.
    /// - Throws: `ConfigurationError` for the first broken rule, the others in `further`.
    public func validate() throws(ConfigurationError) {
        if let error = ConfigurationError(combining: validationProblems()) { throw error }
    }

    /// Every cross-field rule broken, in order. A rule that involves a key in `skipping` (a key whose own
    /// value was invalid, so the default stands in for it) is not checked.
    public func validationProblems(skipping invalid: Set<String> = []) -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        if !senderID.isEmpty, !senderID.allSatisfy(\.isASCII) || senderID.contains(where: { !$0.isNumber }) {
            // The value is not echoed: a server key pasted here by mistake must not reach the terminal.
            problems.append(ConfigurationError(field: "sender_id", rule: "must be the numeric sender ID (project number), got \(senderID.count) characters that are not all digits"))
        }
        if jidDomain.isEmpty || jidDomain.contains(where: { $0 == "@" || $0 == "/" || $0 == " " }) {
            problems.append(ConfigurationError(field: "jid_domain", rule: "must be a domain such as gcm.googleapis.com"))
        }
        for (name, backoff) in [("retry", retryBackoff), ("rate_limit", rateLimitBackoff), ("reconnect", reconnectBackoff),
                                ("refused_reconnect", refusedReconnectBackoff)]
        where backoff.cap < backoff.base
            && !invalid.contains("\(name)_initial_seconds") && !invalid.contains("\(name)_max_seconds") {
            problems.append(ConfigurationError(field: "\(name)_max_seconds", rule: "must be at least \(name)_initial_seconds (\(Self.seconds(backoff.base))), got \(Self.seconds(backoff.cap))"))
        }
        if deadPeerSeconds <= keepaliveSeconds, !invalid.contains("dead_peer_seconds"), !invalid.contains("keepalive_seconds") {
            problems.append(ConfigurationError(field: "dead_peer_seconds", rule: "must be greater than keepalive_seconds (\(Self.seconds(keepaliveSeconds))), got \(Self.seconds(deadPeerSeconds))"))
        }
        return problems
    }

    /// Final checks before running: the sender ID and server key are present.
    /// - Throws: `ConfigurationError` for every problem (`validate()`'s, then a missing sender ID or key).
    public func validateForRun() throws(ConfigurationError) {
        var problems = validationProblems()
        if senderID.isEmpty {
            problems.append(ConfigurationError(field: "sender_id", rule: "required (config file or --sender-id)"))
        }
        if serverKey.revealed.isEmpty {
            problems.append(ConfigurationError(field: "server_key", rule: "required: set server_key_file, --server-key-file, or CCSD_SERVER_KEY"))
        }
        if let error = ConfigurationError(combining: problems) { throw error }
    }

    /// The name of the systemd credential holding the server key (`LoadCredential=server-key:FILE`).
    public static let serverKeyCredential = "server-key"

    /// `$CREDENTIALS_DIRECTORY/server-key` when systemd passed that credential (the variable is set and the
    /// file exists), else nil. Source: systemd.exec(5), "Credentials".
    public static func serverKeyCredentialPath(environment: [String: String]) -> String? {
        guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else { return nil }
        let path = directory + "/" + serverKeyCredential
        return access(path, F_OK) == 0 ? path : nil
    }

    /// Loads the server key: `--server-key-file`, else `CCSD_SERVER_KEY`, else the systemd credential
    /// `$CREDENTIALS_DIRECTORY/server-key`, else `server_key_file`.
    /// Trailing whitespace (a newline from `echo`) is dropped.
    /// - Throws: `ConfigurationError` naming the file (never its contents) when it cannot be read or is empty.
    public mutating func loadServerKey(flagFile: String?, environment: [String: String]) throws(ConfigurationError) {
        var key: String?
        var source = "CCSD_SERVER_KEY"
        let fileSource = environment["CCSD_SERVER_KEY"] == nil
            ? Configuration.serverKeyCredentialPath(environment: environment) ?? serverKeyFile : nil
        if let path = flagFile ?? fileSource {
            source = path
            let data = try Configuration.readFile(path, field: "server_key_file")
            key = String(decoding: data, as: UTF8.self)
        } else {
            key = environment["CCSD_SERVER_KEY"]
        }
        guard let trimmed = key?.trimmingWhitespace() else { return }
        if trimmed.isEmpty {
            throw ConfigurationError(field: "server_key", rule: "\(source) is empty")
        }
        serverKey = Secret(trimmed)
    }

    /// The contents of `path`.
    /// - Throws: `ConfigurationError` for `field`, with the system's reason ("No such file or directory").
    public static func readFile(_ path: String, field: String) throws(ConfigurationError) -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigurationError(field: field, rule: "cannot read \(shown(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError(field: field, rule: "cannot read \(shown(path)): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            if data.count > 1 << 20 {
                throw ConfigurationError(field: field, rule: "\(shown(path)) is larger than 1 MiB")
            }
        }
    }

    // MARK: Value rules

    static func string(_ key: String, _ value: JSONValue) throws(ConfigurationError) -> String {
        guard let string = value.stringValue, !string.isEmpty else {
            throw ConfigurationError(field: key, rule: "must be a non-empty string, got \(describe(value))")
        }
        return string
    }

    static func integer(_ key: String, _ value: JSONValue, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard case .int(let number) = value, range.contains(Int(number)) else {
            throw ConfigurationError(field: key, rule: "must be an integer from \(range.lowerBound) to \(range.upperBound), got \(describe(value))")
        }
        return Int(number)
    }

    static func seconds(_ key: String, _ value: JSONValue) throws(ConfigurationError) -> Double {
        let number: Double? = switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
        guard let number, number > 0, number <= 86_400 * 28 else {
            throw ConfigurationError(field: key, rule: "must be a number of seconds above 0, got \(describe(value))")
        }
        return number
    }

    /// One of the enum's raw values, e.g. `store`: `"sqlite"` or `"memory"`.
    static func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _ value: JSONValue) throws(ConfigurationError) -> Choice
    where Choice.RawValue == String {
        guard let text = value.stringValue, let choice = Choice(rawValue: text) else {
            let names = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
            throw ConfigurationError(field: key, rule: "must be \(names), got \(describe(value))")
        }
        return choice
    }

    /// An `http://` or `https://` URL with a host and no whitespace.
    static func webhookURL(_ key: String, _ value: JSONValue) throws(ConfigurationError) -> String {
        let text = try string(key, value)
        let lower = text.lowercased()
        let scheme = ["http://", "https://"].first { lower.hasPrefix($0) }
        guard let scheme, text.count > scheme.count, !text.contains(where: \.isWhitespace),
              let host = text.dropFirst(scheme.count).split(separator: "/", omittingEmptySubsequences: false).first,
              !host.isEmpty else {
            throw ConfigurationError(field: key, rule: "must be an http:// or https:// URL with a host, got \(describe(value))")
        }
        return text
    }

    static func endpoint(_ key: String, _ value: JSONValue) throws(ConfigurationError) -> Endpoint {
        guard let text = value.stringValue, let endpoint = Endpoint(parsing: text) else {
            throw ConfigurationError(field: key, rule: "must be \"HOST:PORT\" with a port from 1 to 65535, got \(describe(value))")
        }
        return endpoint
    }

    /// Seconds for an error message: `30`, `2.5`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A value for an error message: its JSON text, shortened past 60 characters; a string only when
    /// `shown(_:)` shows it.
    static func describe(_ value: JSONValue) -> String {
        if let string = value.stringValue, shown(string) != string { return shown(string) }
        let text = value.serialized()
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }

    /// `text` as given, or a placeholder when it may be a credential: an error message names the setting and
    /// the rule, but a server key or registration token pasted into the wrong setting (or flag, or path) must
    /// not reach the terminal or the log. Shown: up to 16 characters, or anything with a `.` or `/` (a host,
    /// an endpoint, a path, a number); server keys and tokens have neither and are longer.
    public static func shown(_ text: String) -> String {
        if text.count <= 16 || text.contains(".") || text.contains("/") { return text }
        return "a value of \(text.count) characters (not shown: it may be a credential)"
    }

    /// The known key nearest to `key` when it is close enough to be a typo.
    static func closestKey(to key: String) -> String? {
        EditDistance.suggestion(for: key, among: knownKeys)
    }
}

extension Configuration {
    /// The intake byte bound in force: `max_queued_bytes` when set, else `defaultMaxQueuedBytes`.
    public var effectiveMaxQueuedBytes: Int { maxQueuedBytes ?? defaultMaxQueuedBytes }

    /// `max_queued_bytes` when unset: 1 KiB per window slot of every connection (connections × window ×
    /// 1024), at least 1 MiB: with messages of a few hundred bytes (weighing about 1.2 KiB each) a small
    /// multiple of what the connections have in flight, so the windows stay full while memory stays flat;
    /// the rest waits in the producer's pipe. Twice that with the SQLite store: there a message also waits
    /// for two commits (its insert before it is sent, its final after its ack) while it counts: on one
    /// connection, six alternated floods ran at a median of 64,610 messages a second with the in-memory
    /// default (1 MiB) and 72,604 with twice it, for about 2.5 MiB more resident memory; four times gave no
    /// more (docs/performance.md, "Seventh round").
    public var defaultMaxQueuedBytes: Int {
        let inMemory = max(1 << 20, connections * window * 1024)
        return store == .sqlite ? 2 * inMemory : inMemory
    }
}

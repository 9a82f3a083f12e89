import CCS
import CCurl
import Daemon
import FoundationEssentials
import Store

/// POSTs the events journal to a configured URL in batches (`{"events":[…]}`, the same objects as the
/// events file and `GET /v1/events`): in order, at least once, with its cursor persisted.
///
/// One worker thread does the work, so the event loop never waits on the receiver:
/// 1. it reads the cursor of consumer `webhook` (none: from the start of what the journal still holds);
/// 2. it reads up to `batchSize` events after the cursor (`EventJournalAccess`, on the writer's queue);
///    none: it sleeps until `eventsJournaled` wakes it (or `pollSeconds` pass);
/// 3. it POSTs them with libcurl (`Content-Type: application/json`, `Authorization: Bearer …` when a token
///    is set, `timeoutSeconds` for the whole request);
/// 4. on a 2xx the cursor moves past the batch and is acknowledged (persisted with the store's next commit;
///    a crash before that delivers the batch again: receivers skip a `seq` they have seen); on a failure
///    the same batch is POSTed again after the backoff of `WebhookRetryPolicy`. Nothing is skipped.
///
/// Thread safety: every public method may be called from any thread.
public final class WebhookOutlet: @unchecked Sendable {
    /// The journal consumer name of the webhook's cursor.
    public static let consumer = "webhook"

    /// What the outlet POSTs where.
    public struct Settings: Sendable {
        /// `http://` or `https://` URL.
        public var url: String
        /// Events per POST, at most (1…10000).
        public var batchSize: Int
        /// Seconds one POST may take, connecting included.
        public var timeoutSeconds: Double
        /// The bearer token (`Authorization: Bearer …`), never logged; nil: no header.
        public var token: String?
        /// Backoffs after failed POSTs.
        public var retry: WebhookRetryPolicy
        /// Seconds between reads of the journal when nothing woke the outlet (a safety net).
        public var pollSeconds: Double

        public init(url: String, batchSize: Int = 100, timeoutSeconds: Double = 10, token: String? = nil,
                    retry: WebhookRetryPolicy = WebhookRetryPolicy(), pollSeconds: Double = 30) {
            self.url = url
            self.batchSize = batchSize
            self.timeoutSeconds = timeoutSeconds
            self.token = token
            self.retry = retry
            self.pollSeconds = pollSeconds
        }

        /// The settings of `configuration` (`webhook_url`, `webhook_batch_size`, `webhook_timeout_seconds`,
        /// `webhook_token_file`), or nil when no `webhook_url` is set.
        /// - Throws: `ConfigurationError` for `webhook_token_file` when it cannot be read or is empty.
        public init?(configuration: Configuration) throws(ConfigurationError) {
            guard let url = configuration.webhookURL else { return nil }
            var token: String?
            if let path = configuration.webhookTokenFile {
                let text = String(decoding: try Configuration.readFile(path, field: "webhook_token_file"), as: UTF8.self)
                    .trimmingWhitespace()
                guard !text.isEmpty else { throw ConfigurationError(field: "webhook_token_file", rule: "\(path) is empty") }
                token = text
            }
            self.init(url: url, batchSize: configuration.webhookBatchSize, timeoutSeconds: configuration.webhookTimeoutSeconds,
                      token: token)
        }
    }

    private let journal: EventJournalAccess
    private let logger: Logger
    private let condition = ThreadCondition()
    // Guarded by `condition`.
    private var settings: Settings
    private var started = false
    private var stopping = false
    private var running = false
    private var wakePending = true
    private var stats = WebhookMetrics()

    /// - Parameters:
    ///   - journal: the events journal (`CCSDaemon.journalAccess`).
    ///   - logger: failures are logged with the URL's scheme and host only, never the token.
    public init(settings: Settings, journal: EventJournalAccess, logger: Logger) {
        self.settings = settings
        self.journal = journal
        self.logger = logger
    }

    /// Starts the worker thread. Once only.
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        precondition(!started, "WebhookOutlet.start() twice")
        started = true
        running = true
        DetachedThread.start(name: "ccsd.webhook") { [self] in
            run()
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Stops the worker and waits for it: at once when it is idle or backing off, else once the POST in
    /// progress ends (at most `timeoutSeconds`). A batch POSTed but not answered is delivered again by the
    /// next start (at least once).
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while running { condition.wait() }
        condition.unlock()
    }

    /// `stop()` on another thread, then `completion` there: for callers on the event loop, which must not wait
    /// for a POST in progress.
    public func stop(then completion: @escaping @Sendable () -> Void) {
        DetachedThread.start(name: "ccsd.webhook") { [self] in
            stop()
            completion()
        }
    }

    /// New events are journaled (through `seq`): the worker reads them now. Cheap; any thread.
    public func eventsJournaled(through seq: Int64) {
        condition.lock()
        wakePending = true
        condition.signal()
        condition.unlock()
    }

    /// New settings (a reload): they apply from the next POST; the cursor and the batch in hand are kept.
    public func reload(_ settings: Settings) {
        condition.lock()
        self.settings = settings
        condition.signal()
        condition.unlock()
    }

    /// Counters for `GET /metrics`.
    public func metrics() -> WebhookMetrics {
        condition.lock()
        defer { condition.unlock() }
        return stats
    }

    // MARK: Worker

    private func run() {
        guard let handle = ccsd_curl_easy_init() else {
            let reason = ccsd_curl_load().map { String(cString: $0) } ?? "libcurl could not make a handle"
            logger.error("webhook: \(reason); no events are POSTed")
            return
        }
        defer { ccsd_curl_easy_cleanup(handle) }
        var failures = 0
        // The cursor: where delivery resumes.
        var cursor: Int64 = 0
        while true {
            guard let result = wait(for: { completion in journal.cursor(Self.consumer, completion) }) else { return }
            switch result {
            case .success(let stored):
                cursor = stored ?? 0
                // Registered at once: from now on the journal keeps what the webhook has not delivered
                // (up to the retention age), even before its first delivery.
                if stored == nil { journal.acknowledge(Self.consumer, 0) }
            case .failure(let error):
                failures += 1
                logger.warning("webhook: cannot read its cursor; retrying", ["error": error.description])
                guard sleep(seconds: currentSettings.retry.transient.delay(attempt: failures, u: 0), wakeable: false) else { return }
                continue
            }
            break
        }
        failures = 0
        updateStats {
            $0.cursor = cursor
            $0.resumedFrom = cursor
        }
        var batch: [JournaledEvent] = []
        while !isStopping {
            let settings = currentSettings
            if batch.isEmpty {
                clearWake()
                guard let result = wait(for: { completion in journal.events(cursor, settings.batchSize, completion) }) else { return }
                switch result {
                case .success(let events):
                    batch = events
                case .failure(let error):
                    logger.warning("webhook: cannot read the events journal; retrying", ["error": error.description])
                    guard sleep(seconds: settings.pollSeconds, wakeable: true) else { return }
                    continue
                }
                if batch.isEmpty {
                    guard sleep(seconds: settings.pollSeconds, wakeable: true) else { return }
                    continue
                }
            }
            let attempt = post(batch, settings: settings, handle: handle)
            logger.debug("webhook: POST", ["result": Self.describe(attempt), "first_seq": "\(batch.first!.seq)"])
            let verdict = settings.retry.verdict(attempt, failures: failures + 1, u: Double.random(in: -1...1))
            switch verdict {
            case .delivered:
                if failures > 0 {
                    logger.info("webhook: delivering again", ["url": Self.redacted(settings.url), "failures": "\(failures)"])
                }
                failures = 0
                cursor = batch.last!.seq
                journal.acknowledge(Self.consumer, cursor)
                let count = batch.count
                updateStats {
                    $0.deliveredEvents += count
                    $0.deliveredBatches += 1
                    $0.cursor = cursor
                }
                batch.removeAll()
            case .retry(let delay, let failure):
                failures += 1
                updateStats {
                    if failure == .transient { $0.transientFailures += 1 } else { $0.configurationFailures += 1 }
                }
                let fields: KeyValuePairs<String, String> = [
                    "url": Self.redacted(settings.url), "result": Self.describe(attempt), "first_seq": "\(batch.first!.seq)",
                    "events": "\(batch.count)", "failures": "\(failures)", "retry_in_seconds": delay.threeDecimals]
                if failure == .configuration {
                    logger.error("webhook: the receiver refuses the POST; check webhook_url, webhook_token_file and the receiver; retrying slowly, nothing is dropped", fields)
                } else {
                    logger.warning("webhook: POST failed; retrying the same batch", fields)
                }
                guard sleep(seconds: delay, wakeable: false) else { return }
            }
        }
    }

    /// One POST of `batch`.
    private func post(_ batch: [JournaledEvent], settings: Settings, handle: UnsafeMutableRawPointer) -> WebhookRetryPolicy.Attempt {
        var body = "{\"events\":["
        for (index, event) in batch.enumerated() {
            if index > 0 { body += "," }
            body += CCSDaemon.eventObject(event)
        }
        body += "]}"
        let bytes = Array(body.utf8)
        ccsd_curl_easy_reset(handle)
        var headers: UnsafeMutablePointer<curl_slist>?
        headers = ccsd_curl_slist_append(headers, "Content-Type: application/json")
        headers = ccsd_curl_slist_append(headers, "Expect:")  // no 100-continue round trip
        if let token = settings.token { headers = ccsd_curl_slist_append(headers, "Authorization: Bearer \(token)") }
        defer { ccsd_curl_slist_free_all(headers) }
        let timeoutMillis = max(1, Int(settings.timeoutSeconds * 1000))
        _ = ccsd_curl_setopt_string(handle, CURLOPT_URL, settings.url)
        _ = ccsd_curl_setopt_string(handle, CURLOPT_USERAGENT, "ccsd/\(CCSDVersion.string)")
        _ = ccsd_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMillis)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, timeoutMillis)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_POST, 1)
        _ = ccsd_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, bytes.count)
        _ = ccsd_curl_setopt_write_function(handle) { _, size, count, _ in size * count }  // the answer's body is not used
        let code: CURLcode = bytes.withUnsafeBufferPointer { buffer in
            _ = ccsd_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress))
            return ccsd_curl_easy_perform(handle)
        }
        guard code == CURLE_OK else { return .transportError(String(cString: ccsd_curl_easy_strerror(code))) }
        var status = 0
        _ = ccsd_curl_response_code(handle, &status)
        return .status(status)
    }

    // MARK: Waiting

    private var currentSettings: Settings {
        condition.lock()
        defer { condition.unlock() }
        return settings
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func clearWake() {
        condition.lock()
        wakePending = false
        condition.unlock()
    }

    private func updateStats(_ change: (inout WebhookMetrics) -> Void) {
        condition.lock()
        change(&stats)
        condition.unlock()
    }

    /// Sleeps `seconds`, or until a stop (false), or, when `wakeable`, until new events are journaled.
    private func sleep(seconds: Double, wakeable: Bool) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
        condition.lock()
        defer { condition.unlock() }
        while !stopping, !(wakeable && wakePending) {
            if !condition.wait(until: deadline) { break }
        }
        return !stopping
    }

    /// Starts `work` and waits for its completion (which may run on any thread); nil on a stop.
    private func wait<T: Sendable>(for work: (@escaping @Sendable (T) -> Void) -> Void) -> T? {
        let box = ResultBox<T>()
        work { [condition] value in
            condition.lock()
            box.value = value
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        defer { condition.unlock() }
        while box.value == nil, !stopping { condition.wait() }
        return box.value
    }

    // MARK: Log text

    /// The URL's scheme and host (no user info, path or query: they may hold secrets).
    static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "(invalid URL)" }
        var rest = url[schemeEnd.upperBound...]
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return String(url[..<schemeEnd.upperBound]) + rest
    }

    static func describe(_ attempt: WebhookRetryPolicy.Attempt) -> String {
        switch attempt {
        case .status(let code): "HTTP \(code)"
        case .transportError(let message): message
        }
    }
}

/// A value handed from another thread under the outlet's condition.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// The webhook outlet's counters, for `GET /metrics`.
public struct WebhookMetrics: Sendable, Equatable {
    /// Events POSTed and answered 2xx.
    public var deliveredEvents = 0
    /// POSTs answered 2xx.
    public var deliveredBatches = 0
    /// POSTs that failed and are retried: connection errors, timeouts, 408, 429, 5xx.
    public var transientFailures = 0
    /// POSTs the receiver refused (other statuses): a configuration problem, retried slowly.
    public var configurationFailures = 0
    /// The `seq` of the last event delivered (0 before any).
    public var cursor: Int64 = 0
    /// The cursor the outlet read at its start and resumes after (nil until then; not exported).
    public var resumedFrom: Int64?

    public init() {}

    func render(into out: inout ExpositionWriter) {
        out.counter("ccsd_webhook_events_delivered_total", "Events the webhook receiver accepted (2xx).", deliveredEvents)
        out.counter("ccsd_webhook_batches_delivered_total", "Webhook POSTs answered 2xx.", deliveredBatches)
        out.counter("ccsd_webhook_failures_total", "Webhook POSTs that failed and are retried, by kind.",
                    [(["kind": "configuration"], Double(configurationFailures)), (["kind": "transient"], Double(transientFailures))])
        out.gauge("ccsd_webhook_cursor", "The seq of the last event the webhook receiver accepted.", Double(cursor))
    }
}

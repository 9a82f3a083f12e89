import CCS
import Daemon
import Dispatch
import Foundation
import Store
import Synchronization
import Testing
@testable import Service

/// The webhook outlet: the pure retry decision, then the real outlet against a small HTTP receiver on loopback
/// (Tests/Fixtures/webhook_receiver.py, stopped by its PID) over a real SQLite journal and `StoreWriter`.
@Suite struct WebhookOutletTests {
    // MARK: Retry policy (no sockets)

    @Test func statusesAndTransportErrorsAreClassified() {
        for code in [200, 201, 204, 299] { #expect(WebhookRetryPolicy.classify(.status(code)) == nil, "\(code)") }
        for code in [408, 429, 500, 502, 503, 504, 599] { #expect(WebhookRetryPolicy.classify(.status(code)) == .transient, "\(code)") }
        for code in [400, 401, 403, 404, 405, 410, 413, 422, 301, 302, 100, 0] {
            #expect(WebhookRetryPolicy.classify(.status(code)) == .configuration, "\(code)")
        }
        #expect(WebhookRetryPolicy.classify(.transportError("Couldn't connect to server")) == .transient)
        #expect(WebhookRetryPolicy.classify(.transportError("Timeout was reached")) == .transient)
    }

    @Test func failuresBackOffExponentiallyWithJitterAndConfigurationErrorsSlowly() {
        let policy = WebhookRetryPolicy()
        #expect(policy.verdict(.status(204), failures: 3, u: 0) == .delivered)
        let transient = (1...8).map { policy.verdict(.status(503), failures: $0, u: 0) }
        #expect(transient == [1, 2, 4, 8, 16, 32, 60, 60].map { .retry(after: $0, failure: .transient) })
        // Jitter spreads each delay by ±20 %, never above the cap.
        #expect(policy.verdict(.transportError("x"), failures: 2, u: -1) == .retry(after: 1.6, failure: .transient))
        #expect(policy.verdict(.transportError("x"), failures: 2, u: 1) == .retry(after: 2.4, failure: .transient))
        #expect(policy.verdict(.status(500), failures: 10, u: 1) == .retry(after: 60, failure: .transient))
        let configuration = (1...6).map { policy.verdict(.status(401), failures: $0, u: 0) }
        #expect(configuration == [30, 60, 120, 240, 480, 600].map { .retry(after: $0, failure: .configuration) })
    }

    @Test func logsShowTheURLsSchemeAndHostOnly() {
        #expect(WebhookOutlet.redacted("https://user:secret@hooks.example:8443/path?key=abc") == "https://hooks.example:8443")
        #expect(WebhookOutlet.redacted("http://127.0.0.1:9/x") == "http://127.0.0.1:9")
    }

    @Test func configurationKeysAreParsedAndChecked() throws {
        var configuration = Configuration()
        try configuration.apply(fileContents: Data(#"{"webhook_url":"https://hooks.example/ccsd","webhook_batch_size":50,"webhook_timeout_seconds":2.5}"#.utf8),
                                path: "ccsd.json")
        #expect(configuration.webhookURL == "https://hooks.example/ccsd")
        #expect(configuration.webhookBatchSize == 50 && configuration.webhookTimeoutSeconds == 2.5)
        let settings = try #require(try WebhookOutlet.Settings(configuration: configuration))
        #expect(settings.url == "https://hooks.example/ccsd" && settings.batchSize == 50 && settings.token == nil)
        for (text, field) in [(#"{"webhook_url":"ftp://x"}"#, "webhook_url"), (#"{"webhook_url":"https://"}"#, "webhook_url"),
                              (#"{"webhook_batch_size":0}"#, "webhook_batch_size"), (#"{"webhook_timeout_seconds":-1}"#, "webhook_timeout_seconds")] {
            var bad = Configuration()
            #expect(throws: ConfigurationError.self) { try bad.apply(fileContents: Data(text.utf8), path: "ccsd.json") }
            do { try bad.apply(fileContents: Data(text.utf8), path: "ccsd.json") } catch { #expect(error.field == field) }
        }
        var missingToken = configuration
        missingToken.webhookTokenFile = "/nonexistent/webhook-token"
        #expect(throws: ConfigurationError.self) { _ = try WebhookOutlet.Settings(configuration: missingToken) }
        #expect(try WebhookOutlet.Settings(configuration: Configuration()) == nil)
    }

    // MARK: Against a receiver on loopback

    /// The receiver process; stopped by its PID.
    final class Receiver {
        let process = Process()
        let record: String
        let port: Int

        init(record: String, statuses: [Int] = []) throws {
            self.record = record
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/webhook_receiver.py").path
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [script, record, statuses.map(String.init).joined(separator: ",")]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // The first line is the port (bounded: the read ends when the process writes it or exits).
            var text = ""
            while !text.contains("\n") {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }

        var url: String { "http://127.0.0.1:\(port)/hook" }

        /// Each POST: status, headers, and the seqs of its events.
        func requests() -> [(status: Int, authorization: String, contentType: String, seqs: [Int])] {
            guard let text = try? String(contentsOfFile: record, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let body = object["body"] as? [String: Any], let events = body["events"] as? [[String: Any]] else { return nil }
                return (object["status"] as? Int ?? 0, object["authorization"] as? String ?? "", object["content_type"] as? String ?? "",
                        events.compactMap { $0["seq"] as? Int })
            }
        }

        /// Seqs of the POSTs answered 2xx, in arrival order.
        func delivered() -> [Int] { requests().filter { (200...299).contains($0.status) }.flatMap(\.seqs) }

        func stop() {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    /// A SQLite journal with a `StoreWriter` on a serial queue standing in for the event loop.
    final class Journal: @unchecked Sendable {
        let loop = DispatchQueue(label: "test.webhook.loop")
        let writer: StoreWriter
        private let outlet = OutletReference()
        private var nextRecordID: UInt64 = 0  // on `loop`

        init(directory: String) throws {
            let store = try SQLiteMessageStore(directory: directory)
            _ = try store.load(nowUnixMillis: StoreWriter.wallClockMillis())
            let loop = self.loop
            let outlet = self.outlet
            writer = StoreWriter(store: store, execute: { loop.async(execute: $0) }) { report in
                // What `CCSDaemon.observeJournal` does: wake the outlet with each commit's last seq.
                if case .committed(let result) = report, let last = result.journaled.last {
                    outlet.current?.eventsJournaled(through: last.seq)
                }
            }
        }

        var access: EventJournalAccess { .writer(writer, post: { [loop] work in loop.async(execute: work) }) }

        func attach(_ webhook: WebhookOutlet) { outlet.current = webhook }

        /// Journals `count` events (one commit).
        func append(_ count: Int, from first: Int) {
            loop.async { [self] in
                for n in first..<(first + count) {
                    nextRecordID += 1
                    writer.enqueue(StoreBatch.Record(id: nextRecordID, line: #"{"event":"test","n":\#(n)}"#,
                                                     finalMessageID: nil, handedOverMessageID: nil))
                }
            }
        }

        /// Commits what is pending (the webhook's cursor included) and closes the store.
        /// Closes the store (and releases its directory lock) before returning; a loaded machine may take a
        /// while (the writer finishes its commit first), so the bound is generous.
        func close() {
            let done = DispatchSemaphore(value: 0)
            loop.async { [self] in writer.close { done.signal() } }
            let closed = done.wait(timeout: .now() + 60) == .success
            #expect(closed, "the store did not close within 60 s")
        }
    }

    /// The outlet to wake, set once it exists. Weak: the outlet holds the journal's writer (through its access),
    /// whose report closure holds this reference, so a strong one would be a cycle that outlives the test.
    final class OutletReference: @unchecked Sendable {
        private let lock = NSLock()
        private weak var value: WebhookOutlet?
        var current: WebhookOutlet? {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "ccsd-webhook-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Polls `condition` every 10 ms, at most `seconds`.
    static func waitUntil(seconds: Double = 15, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    static func fastSettings(url: String, batchSize: Int, token: String? = nil) -> WebhookOutlet.Settings {
        // No polling to speak of: only the wake-up on each commit can make delivery prompt.
        WebhookOutlet.Settings(url: url, batchSize: batchSize, timeoutSeconds: 5, token: token,
                               retry: WebhookRetryPolicy(transient: Backoff(base: 0.02, cap: 0.1), configuration: Backoff(base: 0.05, cap: 0.1)),
                               pollSeconds: 600)
    }

    @Test func batchesArriveInOrderAndFailuresAreRetriedWithoutSkipping() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try Receiver(record: directory + "/requests.jsonl", statuses: [503, 400, 500])
        defer { receiver.stop() }
        #expect(receiver.port > 0)
        let journal = try Journal(directory: directory + "/state")
        let webhook = WebhookOutlet(settings: Self.fastSettings(url: receiver.url, batchSize: 4, token: "hook-token"),
                                    journal: journal.access, logger: Logger(minimum: .error))
        journal.attach(webhook)
        webhook.start()
        journal.append(10, from: 1)
        #expect(Self.waitUntil { receiver.delivered().count == 10 })
        journal.append(5, from: 11)  // woken by the commit (polling is off)
        #expect(Self.waitUntil { receiver.delivered().count == 15 })
        webhook.stop()
        journal.close()

        let requests = receiver.requests()
        // The three failures were the same first batch, POSTed again; nothing after it went out before it.
        #expect(requests.prefix(4).map(\.status) == [503, 400, 500, 200])
        #expect(requests.prefix(4).allSatisfy { $0.seqs == [1, 2, 3, 4] })
        #expect(receiver.delivered() == Array(1...15))
        #expect(requests.allSatisfy { $0.seqs.count <= 4 && $0.authorization == "Bearer hook-token" && $0.contentType == "application/json" })
        let metrics = webhook.metrics()
        #expect(metrics.transientFailures == 2 && metrics.configurationFailures == 1)
        #expect(metrics.deliveredEvents == 15 && metrics.cursor == 15)
    }

    @Test func aRestartResumesFromThePersistedCursor() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try Receiver(record: directory + "/requests.jsonl")
        defer { receiver.stop() }
        let settings = Self.fastSettings(url: receiver.url, batchSize: 4)

        // First run: 10 events delivered, then a clean stop (the cursor is committed when the store closes).
        let first = try Journal(directory: directory + "/state")
        let webhook = WebhookOutlet(settings: settings, journal: first.access, logger: Logger(minimum: .error))
        first.attach(webhook)
        webhook.start()
        first.append(10, from: 1)
        #expect(Self.waitUntil { webhook.metrics().cursor == 10 })
        webhook.stop()
        first.close()
        let reopened = try SQLiteMessageStore(directory: directory + "/state")
        #expect(try reopened.cursor(of: WebhookOutlet.consumer) == 10)
        reopened.close()

        // Second run: 5 new events; delivery starts after the cursor.
        let second = try Journal(directory: directory + "/state")
        second.append(5, from: 11)
        let resumed = WebhookOutlet(settings: settings, journal: second.access, logger: Logger(minimum: .error))
        second.attach(resumed)
        resumed.start()
        #expect(Self.waitUntil { resumed.metrics().cursor == 15 })
        resumed.stop()
        second.close()

        #expect(receiver.delivered() == Array(1...15), "each event once, in order, across the restart")
        #expect(resumed.metrics().deliveredEvents == 5)
    }
}

extension WebhookOutlet.Settings: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.url == rhs.url && lhs.batchSize == rhs.batchSize && lhs.timeoutSeconds == rhs.timeoutSeconds && lhs.token == rhs.token
    }
}

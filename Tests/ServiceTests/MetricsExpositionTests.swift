import CCS
import Daemon
import Dispatch
import Foundation
import Store
import Synchronization
import Testing
import TestSupport
import XMLStream
import XMPP
@testable import Service

/// The `/metrics` text: the histogram value type, the renderer's format details, and `promtool check metrics`
/// on the output of a daemon that ran real traffic (mock connections on a manual loop, no sockets).
@Suite struct MetricsExpositionTests {
    // MARK: Histogram

    @Test func histogramBucketsAreInclusiveAndCumulative() {
        var histogram = Histogram(bounds: [0.1, 1, 10])
        for value in [0.05, 0.1, 0.5, 1, 3, 100, -2] { histogram.observe(value) }
        histogram.observe(.nan)  // ignored
        // le=0.1 holds 0.05, 0.1 and the negative one (clamped to 0); le is inclusive.
        #expect(histogram.bucketCounts == [3, 2, 1, 1])
        #expect(histogram.cumulativeCounts == [3, 5, 6, 7])
        #expect(histogram.count == 7)
        #expect(abs(histogram.sum - 104.65) < 1e-9)
    }

    // MARK: Format

    static func sampleMetrics() -> DaemonMetrics {
        var counters = DispatcherCounters()
        counters.accepted = 7
        counters.rejected = 3
        counters.rejectedRetryable = 1
        counters.acked = 5
        counters.nacksByCode = ["INVALID_JSON": .init(final: 1, retried: 0), "SERVICE_UNAVAILABLE": .init(final: 0, retried: 2)]
        let connections = [
            DaemonSnapshot.Connection.make(id: 1, endpoint: Endpoint(host: "ccs.test", port: 5235), state: .ready, inFlight: 3, window: 100),
            DaemonSnapshot.Connection.make(id: 2, endpoint: Endpoint(host: "ccs.test", port: 5236), state: .draining, inFlight: 1, window: 100),
        ]
        let snapshot = DaemonSnapshot.make(lifecycle: "running", connections: connections, outstanding: 6, inFlight: 4, queued: 2,
                                           storeWritable: true, counters: counters)
        var ackLatency = Histogram(bounds: Histogram.ackLatencyBounds)
        ackLatency.observe(0.02)
        ackLatency.observe(4000)
        return DaemonMetrics(snapshot: snapshot, ackLatency: ackLatency,
                             storeCommitLatency: Histogram(bounds: Histogram.commitLatencyBounds), unreadableMessages: 0)
    }

    @Test func everyFamilyHasHelpAndTypeAndCountersEndInTotal() {
        let text = MetricsExposition.render(Self.sampleMetrics(), webhook: WebhookMetrics())
        let lines = text.split(separator: "\n").map(String.init)
        var types: [String: String] = [:]
        for line in lines where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            types[String(parts[2])] = String(parts[3])
        }
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { String($0.split(separator: " ")[2]) })
        #expect(Set(types.keys) == helped)
        for (name, type) in types {
            #expect(name.hasPrefix("ccsd_"))
            #expect(name.hasSuffix("_total") == (type == "counter"), "\(name) is a \(type)")
        }
        // Every sample belongs to a declared family.
        for line in lines where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = ["_bucket", "_sum", "_count"].reduce(name) { types[$0] == nil && $0.hasSuffix($1) ? String($0.dropLast($1.count)) : $0 }
            #expect(types[family] != nil, "\(line)")
        }
        #expect(text.hasSuffix("\n"))
    }

    @Test func samplesCarryTheirLabelsAndValues() {
        let text = MetricsExposition.render(Self.sampleMetrics())
        let lines = Set(text.split(separator: "\n").map(String.init))
        for expected in [
            #"ccsd_messages_accepted_total 7"#,
            #"ccsd_messages_rejected_total{retryable="false"} 2"#,
            #"ccsd_messages_rejected_total{retryable="true"} 1"#,
            #"ccsd_messages_nacked_total{code="INVALID_JSON",final="true"} 1"#,
            #"ccsd_messages_nacked_total{code="SERVICE_UNAVAILABLE",final="false"} 2"#,
            #"ccsd_connection_in_flight{connection="2",endpoint="ccs.test:5236"} 1"#,
            #"ccsd_connection_window{connection="1",endpoint="ccs.test:5235"} 100"#,
            #"ccsd_connections{state="ready"} 1"#,
            #"ccsd_connections{state="draining"} 1"#,
            #"ccsd_connections{state="connecting"} 0"#,
            #"ccsd_messages_queued 2"#,
            #"ccsd_lifecycle_state{state="running"} 1"#,
            // Cumulative buckets: 0.02 is in le=0.025 and every bucket above; 4000 only in +Inf.
            #"ccsd_ack_latency_seconds_bucket{le="0.01"} 0"#,
            #"ccsd_ack_latency_seconds_bucket{le="0.025"} 1"#,
            #"ccsd_ack_latency_seconds_bucket{le="3600"} 1"#,
            #"ccsd_ack_latency_seconds_bucket{le="+Inf"} 2"#,
            #"ccsd_ack_latency_seconds_sum 4000.02"#,
            #"ccsd_ack_latency_seconds_count 2"#,
            #"ccsd_store_commit_seconds_count 0"#,
            #"ccsd_store_commit_seconds_bucket{le="0.0001"} 0"#,
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
    }

    @Test func labelValuesAndHelpAreEscaped() {
        #expect(MetricsExposition.escapeLabelValue(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        var counters = DispatcherCounters()
        counters.nacksByCode = ["BAD \"CODE\"\n\\": .init(final: 1, retried: 0)]
        let snapshot = DaemonSnapshot.make(lifecycle: "running", connections: [], outstanding: 0, inFlight: 0, queued: 0,
                                           storeWritable: true, counters: counters)
        let metrics = DaemonMetrics(snapshot: snapshot, ackLatency: Histogram(bounds: [1]), storeCommitLatency: Histogram(bounds: [1]),
                                    unreadableMessages: 0)
        let text = MetricsExposition.render(metrics)
        #expect(text.contains(#"ccsd_messages_nacked_total{code="BAD \"CODE\"\n\\",final="true"} 1"#))
        #expect(text.split(separator: "\n").allSatisfy { !$0.isEmpty })  // no raw newline split a sample
    }

    @Test func promtoolAcceptsTheMetricsOfADaemonBeforeAnyTraffic() throws {
        // No connection and no nack yet: those families have HELP and TYPE and no sample.
        let snapshot = DaemonSnapshot.make(lifecycle: "starting", connections: [], outstanding: 0, inFlight: 0, queued: 0,
                                           storeWritable: true, counters: DispatcherCounters())
        let metrics = DaemonMetrics(snapshot: snapshot, ackLatency: Histogram(bounds: Histogram.ackLatencyBounds),
                                    storeCommitLatency: Histogram(bounds: Histogram.commitLatencyBounds), unreadableMessages: 0)
        let result = try Self.promtool(MetricsExposition.render(metrics, webhook: WebhookMetrics()))
        #expect(result.status == 0 && result.output.isEmpty, "promtool: \(result.output)")
    }

    @Test func valuesAreFormattedAsTheFormatRequires() {
        #expect(MetricsExposition.format(3) == "3")
        #expect(MetricsExposition.format(0.25) == "0.25")
        #expect(MetricsExposition.format(.infinity) == "+Inf")
        #expect(MetricsExposition.format(-.infinity) == "-Inf")
        #expect(MetricsExposition.format(.nan) == "NaN")
    }

    // MARK: A daemon with real traffic, checked by promtool

    final class Inbox: @unchecked Sendable {
        private let items = Locked<[@Sendable () -> Void]>([])
        func post(_ work: @escaping @Sendable () -> Void) { items.withLock { $0.append(work) } }
        func take() -> [@Sendable () -> Void] { items.withLock { let taken = $0; $0.removeAll(); return taken } }
    }

    /// Runs the manual loop and the writer's posts until `condition` holds (bounded: 2,000 rounds of ≤ 1 ms).
    @discardableResult
    static func settle(_ loop: ManualLoop, _ inbox: Inbox, until condition: () -> Bool) -> Bool {
        for _ in 0..<2000 {
            loop.run()
            let posted = inbox.take()
            for work in posted { loop.enqueue(work) }
            loop.run()
            if condition() { return true }
            if posted.isEmpty { usleep(1000) }
        }
        return condition()
    }

    static func message(_ json: String) -> XMLElement {
        XMLElement(name: "message", namespace: XMLNamespace.client, children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: json)])
    }

    @Test func promtoolAcceptsTheMetricsOfADaemonThatRanTraffic() throws {
        let loop = ManualLoop()
        let inbox = Inbox()
        let outlet = MemoryOutlet()
        let factory = MockConnectionFactory(loop: loop)
        var configuration = Configuration()
        configuration.senderID = "123456789012"
        configuration.serverKey = Secret("test-key")
        configuration.primaryEndpoint = Endpoint(host: "ccs.test", port: 5235)
        configuration.connections = 1
        let daemon = CCSDaemon(configuration: configuration, store: InMemoryMessageStore(), outlet: outlet, logger: Logger(minimum: .error),
                               scheduler: loop, post: { inbox.post($0) }, connections: factory, exitWhenDone: false,
                               onExit: { _ in })
        daemon.start()
        #expect(Self.settle(loop, inbox) { !factory.made.isEmpty })
        let connection = factory.made[0]
        connection.deliverReady()
        #expect(Self.settle(loop, inbox) { connection.isOpen })
        let items: [CCSDaemon.IntakeItem] = ["m-1", "m-2", "m-3"].enumerated().map { index, id in
            let line = #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
            return .message(try! DownstreamIntake.parse(line: line, now: Date()).get(), line: index + 1)
        }
        daemon.submit(items) {}
        #expect(Self.settle(loop, inbox) { connection.sent.filter { $0.contains("\"data\"") }.count == 3 })
        connection.deliver(Self.message(#"{"message_type":"ack","message_id":"m-1","from":"tok-m-1-APA91b"}"#))
        connection.deliver(Self.message(#"{"message_type":"nack","message_id":"m-2","from":"tok-m-2-APA91b","error":"INVALID_JSON","error_description":"bad"}"#))
        connection.deliver(Self.message(#"{"message_type":"nack","message_id":"m-3","from":"tok-m-3-APA91b","error":"SERVICE_UNAVAILABLE"}"#))
        connection.deliver(Self.message(#"{"message_id":"u-1","from":"DEVICE","category":"com.example","data":{"k":"v"}}"#))
        #expect(Self.settle(loop, inbox) { outlet.lines.contains { $0.contains("\"event\":\"upstream\"") } && daemon.metrics().snapshot.counters.acked == 1 })

        let text = daemon.metricsText()
        let lines = Set(text.split(separator: "\n").map(String.init))
        #expect(lines.contains("ccsd_messages_accepted_total 3"))
        #expect(lines.contains("ccsd_messages_acked_total 1"))
        #expect(lines.contains(#"ccsd_messages_nacked_total{code="INVALID_JSON",final="true"} 1"#))
        #expect(lines.contains(#"ccsd_messages_nacked_total{code="SERVICE_UNAVAILABLE",final="false"} 1"#))
        #expect(lines.contains("ccsd_upstream_messages_total 1"))
        #expect(lines.contains("ccsd_ack_latency_seconds_count 1"))
        #expect(lines.contains(#"ccsd_connections{state="ready"} 1"#))
        let commits = lines.first { $0.hasPrefix("ccsd_store_commit_seconds_count ") }.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(commits > 0)

        let result = try Self.promtool(text)
        #expect(result.status == 0, "promtool: \(result.output)")
        #expect(result.output.isEmpty, "promtool lint: \(result.output)")
    }

    @Test func theDaemonsWebhookDeliversItsEventsWokenByCommits() throws {
        let directory = WebhookOutletTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try WebhookOutletTests.Receiver(record: directory + "/requests.jsonl")
        defer { receiver.stop() }
        let loop = ManualLoop()
        let inbox = Inbox()
        let outlet = MemoryOutlet()
        let factory = MockConnectionFactory(loop: loop)
        var configuration = Configuration()
        configuration.senderID = "123456789012"
        configuration.serverKey = Secret("test-key")
        configuration.primaryEndpoint = Endpoint(host: "ccs.test", port: 5235)
        configuration.connections = 1
        let daemon = CCSDaemon(configuration: configuration, store: InMemoryMessageStore(), outlet: outlet, logger: Logger(minimum: .error),
                               scheduler: loop, post: { inbox.post($0) }, connections: factory, exitWhenDone: false,
                               onExit: { _ in })
        daemon.start()
        #expect(Self.settle(loop, inbox) { !factory.made.isEmpty })
        // Polling is off (600 s): only the daemon's wake-up on each commit makes the webhook read.
        let webhook = daemon.startWebhook(WebhookOutletTests.fastSettings(url: receiver.url, batchSize: 2), logger: Logger(minimum: .error))
        defer { webhook.stop() }
        // Its cursor registered before the first event: the journal keeps everything for it.
        #expect(Self.settle(loop, inbox) { webhook.metrics().resumedFrom != nil })
        Self.settle(loop, inbox) { true }  // one more turn: the registration is pending in the writer
        let connection = factory.made[0]
        connection.deliverReady()
        #expect(Self.settle(loop, inbox) { connection.isOpen })
        let items: [CCSDaemon.IntakeItem] = ["w-1", "w-2", "w-3"].enumerated().map { index, id in
            let line = #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
            return .message(try! DownstreamIntake.parse(line: line, now: Date()).get(), line: index + 1)
        }
        daemon.submit(items) {}
        #expect(Self.settle(loop, inbox) { connection.sent.filter { $0.contains("\"data\"") }.count == 3 })
        connection.deliver(Self.message(#"{"message_type":"ack","message_id":"w-2","from":"tok-w-2-APA91b"}"#))
        // The events file's lines, in order, are what the receiver gets, in order, each once.
        let expected = { outlet.lines.compactMap { try? JSONValue.parse($0).objectValue?["seq"]?.intValue }.map { Int($0) } }
        #expect(Self.settle(loop, inbox) { expected().count >= 5 && receiver.delivered() == expected() })
        let delivered = receiver.delivered()
        #expect(!delivered.isEmpty && delivered == Array(1...max(1, delivered.count)))
        webhook.stop()

        let text = daemon.metricsText(webhook: webhook)
        #expect(text.contains("ccsd_webhook_events_delivered_total \(receiver.delivered().count)\n"))
        let result = try Self.promtool(text)
        #expect(result.status == 0 && result.output.isEmpty, "promtool: \(result.output)")
    }

    /// Runs `promtool check metrics` with `text` on its standard input.
    static func promtool(_ text: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

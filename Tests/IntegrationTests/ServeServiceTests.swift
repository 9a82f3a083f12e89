import CCS
import Foundation
import Testing

/// `ccsd serve` as the service it is meant to be, end to end: what it tells systemd through `NOTIFY_SOCKET`
/// (a datagram socket the test reads, no PID 1), the CLI client commands against it, the `/metrics` text
/// after real traffic (checked by `promtool`), and the recent errors of its status.
@Suite(.serialized) struct ServeServiceTests {
    @Test func tellsSystemdReadyStatusWatchdogReloadingAndStoppingInOrder() throws {
        // Acks come 2.5 s after a message, so one message stays in flight long enough for a STATUS= update.
        let bed = try ServeBed { $0.ackLatencyMilliseconds = 2500 }
        defer { bed.cleanUp() }
        let config = bed.directory + "/config.json"
        try Data(#"{"connections": 1}"#.utf8).write(to: URL(fileURLWithPath: config))
        // On the first READY=1, before anything else is read: the API must answer already.
        let answerAtReady = Results()
        let reader = try NotifySocketReader(path: bed.directory + "/notify.sock") { datagram, seen in
            if datagram.hasPrefix("READY=1"), !seen.contains(where: { $0.hasPrefix("READY=1") }) {
                answerAtReady.set(try? bed.curl(["http://localhost/healthz"], maxTime: 5))
            }
        }
        defer { reader.stop() }
        // WATCHDOG_USEC as systemd sets it for WatchdogSec=1; no WATCHDOG_PID (sd_watchdog_enabled(3): then any
        // process may take the setting).
        try bed.start(["--config", config], environment: ["NOTIFY_SOCKET": reader.path, "WATCHDOG_USEC": "1000000"])
        #expect(bed.waitUntilReady())
        #expect(pollUntil(timeout: 10) { reader.datagrams.contains { $0.hasPrefix("READY=1") } })
        #expect(answerAtReady.value?.status == 200, "the API did not answer when READY=1 came")

        // STATUS= follows the queue: the message in flight shows, then goes.
        #expect(try bed.post(ServeAPITests.message("n-1")).status == 202)
        #expect(pollUntil(timeout: 10) { reader.datagrams.contains { $0.hasPrefix("STATUS=") && $0.contains("1 in flight") } })
        #expect(bed.waitForFinal("n-1")?["outcome"]?["event"] == .string("acked"))
        #expect(pollUntil(timeout: 10) { reader.datagrams.filter { $0 == "WATCHDOG=1" }.count >= 2 })

        kill(bed.pid, SIGHUP)
        #expect(pollUntil(timeout: 10) { reader.datagrams.filter { $0.hasPrefix("READY=1") }.count == 2 })
        #expect(bed.stop() == 0)
        #expect(pollUntil(timeout: 5) { reader.datagrams.contains { $0.hasPrefix("STOPPING=1") } })

        let datagrams = reader.datagrams
        func index(after start: Int = -1, _ predicate: (String) -> Bool) -> Int? {
            datagrams.indices.first { $0 > start && predicate(datagrams[$0]) }
        }
        // READY=1 first, with the status line.
        let first = try #require(datagrams.first)
        #expect(first.hasPrefix("READY=1\nSTATUS=") && first.contains("/1 connection ready"), "\(first)")
        let watchdog = try #require(index { $0 == "WATCHDOG=1" })
        let statusUpdate = try #require(index { $0.hasPrefix("STATUS=") })
        let reloading = try #require(index { $0.hasPrefix("RELOADING=1") })
        let readyAgain = try #require(index(after: reloading) { $0.hasPrefix("READY=1") })
        let stopping = try #require(index { $0.hasPrefix("STOPPING=1") })
        #expect(0 < watchdog && 0 < statusUpdate && watchdog < reloading && statusUpdate < reloading)
        #expect(reloading < readyAgain && readyAgain < stopping, "\(datagrams)")
        #expect(datagrams[reloading].contains("MONOTONIC_USEC="))
        #expect(datagrams[readyAgain].contains("STATUS=") && !datagrams[readyAgain].contains("refused"))
        #expect(datagrams.filter { $0.hasPrefix("READY=1") }.count == 2)
        // After STOPPING=1 only the watchdog pings on (no status lines, no READY).
        #expect(datagrams[(stopping + 1)...].allSatisfy { $0 == "WATCHDOG=1" }, "\(datagrams[stopping...])")
        #expect(bed.log.contains("systemd watchdog on"))
    }

    @Test func cliMetricsAndRecentErrorsAgainstARunningService() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        let environment = ["CCSD_API_SOCKET": bed.socketPath]
        func ccsd(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try CommandLineTests.runProcess(CommandLineTests.binDirectory.appendingPathComponent("ccsd"), arguments,
                                            environment: environment, timeout: 30)
        }
        func status() -> [String: JSONValue]? { (try? bed.curl(["http://localhost/v1/status"]))?.json }

        // send --wait: acked (exit 0), nacked (exit 1, the error printed).
        let acked = try ccsd(["send", "--to", "tok-cccccccccccccccccccc", "--data", "k=v", "--message-id", "cli-1", "--wait"])
        #expect(acked.status == 0, "\(acked)")
        #expect(acked.stdout.split(separator: "\n") == ["accepted cli-1", "acked cli-1"], "\(acked)")
        let nacked = try ccsd(["send", "--to", "bad-cccccccccccccccccccc", "--data", "k=v", "--message-id", "cli-2", "--wait"])
        #expect(nacked.status == 1, "\(nacked)")
        #expect(nacked.stdout.contains("nacked cli-2") && nacked.stdout.contains("BAD_REGISTRATION"), "\(nacked)")
        // send --file: a batch with an invalid message; the valid ones go through, the invalid one is named.
        let file = bed.directory + "/batch.jsonl"
        let invalid = #"{"to":"tok-dddddddddddddddddddd","message_id":"f-2","time_to_live":"600","data":{"k":"v"}}"#
        try Data([ServeAPITests.message("f-1"), invalid, ServeAPITests.message("f-3")].joined(separator: "\n").utf8)
            .write(to: URL(fileURLWithPath: file))
        let batch = try ccsd(["send", "--file", file, "--wait"])
        #expect(batch.status == 1, "\(batch)")
        for line in ["accepted f-1", "accepted f-3", "acked f-1", "acked f-3"] { #expect(batch.stdout.contains(line), "\(batch)") }
        #expect(batch.stdout.contains("rejected f-2: time_to_live:"), "\(batch)")

        // Upstream messages, then a drain (a new connection takes over) and a message through it.
        try bed.emulator.sendUpstream(count: 2)
        #expect(pollUntil(timeout: 10) { status()?["counters"]?["upstream"]?.intValue == 2 })
        try bed.emulator.drain()
        #expect(pollUntil(timeout: 20) {
            let now = status()
            return now?["counters"]?["drains"]?.intValue == 1 && now?["connections"]?.arrayValue?.count == 1
                && now?["connections_ready"]?.intValue == 1
        })
        let afterDrain = try ccsd(["send", "--to", "tok-eeeeeeeeeeeeeeeeeeee", "--data", "k=v", "--message-id", "cli-3", "--wait"])
        #expect(afterDrain.status == 0, "\(afterDrain)")

        // /metrics after that traffic: promtool accepts it, and the families count what happened.
        let metrics = try bed.curl(["http://localhost/metrics"]).body
        let lint = try promtoolCheckMetrics(metrics)
        #expect(lint.status == 0 && lint.output.isEmpty, "promtool: \(lint.output)")
        let samples = MetricSamples(metrics)
        #expect(samples["ccsd_messages_accepted_total"] == 5)
        #expect(samples["ccsd_messages_acked_total"] == 4)
        #expect(samples["ccsd_messages_nacked_total", ["code": "BAD_REGISTRATION", "final": "true"]] == 1)
        #expect(samples["ccsd_messages_rejected_total", ["retryable": "false"]] == 1)
        #expect(samples["ccsd_upstream_messages_total"] == 2)
        #expect(samples["ccsd_drains_total"] == 1)
        #expect(samples["ccsd_ack_latency_seconds_count"] == 4)
        #expect(samples["ccsd_messages_outstanding"] == 0)
        #expect(samples["ccsd_connections", ["state": "ready"]] == 1)
        #expect((samples["ccsd_messages_sent_total"] ?? 0) >= 5)

        // Recent errors: the rejection's warning, in /v1/status and in `ccsd status`.
        let errors = status()?["recent_errors"]?.arrayValue ?? []
        #expect(errors.contains {
            $0["level"] == .string("warning") && $0["message"] == .string("message rejected")
                && $0["fields"]?["message_id"] == .string("f-2") && $0["fields"]?["field"] == .string("time_to_live")
        }, "\(errors)")
        let shown = try ccsd(["status"])
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stdout.contains("ccsd: running, store writable"))
        #expect(shown.stdout.contains("connections: 1 (1 ready)"))
        #expect(shown.stdout.contains("queue: 0 queued, 0 in flight, 0 not yet final"))
        #expect(shown.stdout.contains("recent errors:\n"))
        #expect(shown.stdout.contains("warning  message rejected") && shown.stdout.contains("message_id=f-2"), "\(shown.stdout)")
        #expect(!shown.stdout.contains(bed.serverKey))

        // events --after 0: the whole feed, in order.
        let feed = try ccsd(["events", "--after", "0", "--limit", "1000"])
        #expect(feed.status == 0, "\(feed.stderr)")
        let events = feed.stdout.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
        let seqs = events.compactMap { $0["seq"]?.intValue }
        #expect(seqs == Array(1...Int64(max(events.count, 1))))
        #expect(events.contains { $0["event"] == .string("acked") && $0["message_id"] == .string("cli-1") })
        #expect(events.contains { $0["event"] == .string("nacked") && $0["message_id"] == .string("cli-2") })
        #expect(events.contains { $0["event"] == .string("rejected") && $0["message_id"] == .string("f-2") })
        #expect(events.filter { $0["event"] == .string("upstream") }.count == 2)
        let last = try #require(seqs.last)

        // events --follow --ack: reads to the end and acknowledges; a new follower resumes after that.
        let first = try EventsFollower(bed: bed, environment: environment)
        #expect(pollUntil(timeout: 15) { first.seqs.last == last })
        // The acknowledgement is posted after the page is printed: wait until the cursor has moved.
        #expect(pollUntil(timeout: 10) {
            (try? bed.curl(["http://localhost/v1/events?limit=1"]))?.json?["events"]?.arrayValue?.isEmpty == true
        })
        first.stop()
        #expect(try ccsd(["send", "--to", "tok-ffffffffffffffffffff", "--data", "k=v", "--message-id", "cli-4", "--wait"]).status == 0)
        let second = try EventsFollower(bed: bed, environment: environment)
        #expect(pollUntil(timeout: 15) { second.lines.contains { $0.contains("\"acked\"") && $0.contains("cli-4") } })
        second.stop()
        #expect(second.seqs.first == last + 1, "\(second.lines)")
        #expect(first.seqs == Array(1...last))

        // A stopped service: the clear error and exit 3.
        #expect(bed.stop() == 0)
        let down = try ccsd(["status"])
        #expect(down.status == 3 && down.stderr.contains("cannot reach") && down.stderr.contains(bed.socketPath), "\(down)")
        let sendDown = try ccsd(["send", "--to", "tok-cccccccccccccccccccc", "--data", "k=v"])
        #expect(sendDown.status == 3 && sendDown.stderr.contains("cannot reach"), "\(sendDown)")
    }
}

/// `ccsd events --follow --ack` running against a bed's service, its output in a file; stopped by its PID.
final class EventsFollower: @unchecked Sendable {
    // @unchecked Sendable: `process` is set once in init.
    private let process = Process()
    private let outputPath: String

    init(bed: ServeBed, environment: [String: String]) throws {
        outputPath = bed.directory + "/follow-\(UUID().uuidString.prefix(8)).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["events", "--follow", "--ack", "--poll-seconds", "1"]
        process.environment = environment
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: bed.logPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var lines: [String] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    var seqs: [Int64] { lines.compactMap { (try? JSONValue.parse($0))?["seq"]?.intValue } }

    /// SIGKILL: a test process may ignore SIGTERM (an in-process daemon's signal source), and children inherit that.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = process.exitStatus(waitingAtMost: 10)
    }
}

/// The samples of a Prometheus text exposition: `samples[name, labels]` is the value of the sample with
/// exactly those labels (none by default).
struct MetricSamples {
    private var values: [String: Double] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            let name = series.prefix { $0 != "{" }
            var labels: [String: String] = [:]
            for match in series.dropFirst(name.count).matches(of: /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/) {
                labels[String(match.1)] = String(match.2)
            }
            values[Self.key(String(name), labels)] = value
        }
    }

    static func key(_ name: String, _ labels: [String: String]) -> String {
        name + "{" + labels.keys.sorted().map { "\($0)=\(labels[$0]!)" }.joined(separator: ",") + "}"
    }

    subscript(_ name: String, _ labels: [String: String] = [:]) -> Double? { values[Self.key(name, labels)] }
}

/// `promtool check metrics` on `text` (stdin); its exit status and what it printed.
func promtoolCheckMetrics(_ text: String) throws -> (status: Int32, output: String) {
    let directory = NSTemporaryDirectory() + "ccsd-promtool-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/metrics.txt"))
    _ = FileManager.default.createFile(atPath: directory + "/out.txt", contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
    process.arguments = ["check", "metrics"]
    process.standardInput = FileHandle(forReadingAtPath: directory + "/metrics.txt")
    process.standardOutput = FileHandle(forWritingAtPath: directory + "/out.txt")
    process.standardError = FileHandle(forWritingAtPath: directory + "/out.txt")
    try process.run()
    let status = process.exitStatus(waitingAtMost: 30) ?? -1
    let output = (try? String(contentsOfFile: directory + "/out.txt", encoding: .utf8)) ?? ""
    return (status, output)
}

/// A datagram socket bound at `path`, standing in for systemd's notification socket (sd_notify(3)): every
/// datagram received, in order. `onDatagram` runs on the reader's thread before a datagram is recorded,
/// with the ones seen before it.
final class NotifySocketReader: @unchecked Sendable {
    // @unchecked Sendable: `received` and `stopped` are behind `lock`; `fd` is closed only after the reader ends.
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [String] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    init(path: String, onDatagram: @escaping @Sendable (String, [String]) -> Void) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw POSIXError(.ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let socketFD = fd
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 8192)
            // Bounded: at most 3 minutes, whatever the test does.
            let deadline = Date().addingTimeInterval(180)
            while Date() < deadline, !lock.withLock({ stopped }) {
                let count = recv(socketFD, &buffer, buffer.count, 0)
                guard count > 0 else { continue }
                let datagram = String(decoding: buffer[..<count], as: UTF8.self)
                onDatagram(datagram, datagrams)
                lock.withLock { received.append(datagram) }
            }
            finished.signal()
        }
    }

    var datagrams: [String] { lock.withLock { received } }

    func stop() {
        lock.withLock { stopped = true }
        _ = finished.wait(timeout: .now() + 5)
        close(fd)
        unlink(path)
    }
}

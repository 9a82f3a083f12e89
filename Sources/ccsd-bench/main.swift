// ccsd-bench: the benchmark report. For each configuration (connections × store) it pushes downstream
// messages through ccsd to the bundled CCS emulator (no ack delay, no receipts), first as a flood (as fast as
// ccsd takes them: throughput, CPU per message, peak memory), then paced at half the flood's rate (accept-to-
// ack latency below capacity), and prints one table.
//
//   swift build -c release && .build/release/ccsd-bench [--markdown]
//       [--connections 1,4,100,1000] [--store memory,sqlite] [--messages 200000] [--paced-seconds 10] [--runs 3]
//
// Each configuration runs `--runs` floods and then as many paced runs (at half the floods' median rate); a cell
// is the median of its runs (peak RSS the highest), so that one table is not one draw of a machine whose
// single runs swing by a fifth.
//
// ccsd and the emulator run as separate processes (release builds next to this binary), so each one's CPU
// time and peak RSS are its own; each configuration runs in a child process of its own, so that the children's
// usage stays apart. Input is written only once the emulator has seen every connection log in, and ccsd's CPU
// per message counts from then to its last `acked` event (its CPU-time clock, to the nanosecond; the shutdown
// after it is reported apart, as ccsd_shutdown_cpu). Latency is measured from the `accepted`
// event to the `acked` event as this driver reads them from ccsd's events outlet.
//
// Other modes: `ccsd-bench emulator …` (the emulator alone, EmulatorLoad.swift) and `ccsd-bench json-parse …`
// (JSONParseBench.swift).
import CCS
import Foundation
import Synchronization
import TLS

struct BenchOptions {
    var messages = 200_000
    var connections = [1, 4, 100, 1000]
    var stores = ["memory", "sqlite"]
    var ackLatencyMilliseconds = 0
    /// How long each paced run lasts (its message count is the rate times this, at most `messages`).
    var pacedSeconds = 10.0
    var markdown = false
    /// Floods and paced runs per configuration: each cell is the median of the runs (peak RSS: the highest),
    /// with the lowest and highest in parentheses for throughput, CPU per message and p99.
    var runs = 3
    /// Internal: run one load in this process and print its result line.
    var one: (store: String, connections: Int, rate: Int)?
}

func usage() -> Never {
    FileHandle.standardError.write(Data("""
        usage: ccsd-bench [--markdown] [--connections 1,4,100,1000] [--store memory,sqlite] [--messages N]
                          [--paced-seconds S] [--ack-latency-ms N] [--runs N]
               ccsd-bench emulator [--messages N] [--window W] [--connections C]
               ccsd-bench json-parse intake|inbound FILE COUNT [--foundation-only]

        """.utf8))
    exit(2)
}

func parseOptions() -> BenchOptions {
    var options = BenchOptions()
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let flag = arguments.next() {
        switch flag {
        case "--messages": options.messages = Int(arguments.next() ?? "") ?? options.messages
        case "--connections": options.connections = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }
        case "--store":
            options.stores = (arguments.next() ?? "").split(separator: ",").map(String.init)
            guard !options.stores.isEmpty, options.stores.allSatisfy({ $0 == "memory" || $0 == "sqlite" }) else {
                FileHandle.standardError.write(Data("ccsd-bench: --store takes memory, sqlite or both (memory,sqlite)\n".utf8))
                exit(2)
            }
        case "--ack-latency-ms": options.ackLatencyMilliseconds = Int(arguments.next() ?? "") ?? 0
        case "--paced-seconds": options.pacedSeconds = Double(arguments.next() ?? "") ?? options.pacedSeconds
        case "--markdown": options.markdown = true
        case "--runs": options.runs = max(1, Int(arguments.next() ?? "") ?? options.runs)
        case "--one":
            guard let store = arguments.next(), let connections = Int(arguments.next() ?? ""),
                  let rate = Int(arguments.next() ?? "") else { usage() }
            options.one = (store, connections, rate)
        default: usage()
        }
    }
    return options
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// CPU seconds (user + system, all threads) a live child process has used so far, to the nanosecond: its
/// CPU-time clock (`clock_getcpuclockid(3)`). Nil once the process is gone.
func processCPUSeconds(_ pid: Int32) -> Double? {
    var clock = clockid_t()
    var now = timespec()
    guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &now) == 0 else { return nil }
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// CPU seconds (user + system) and peak RSS (KiB) of a live process, from /proc.
func procUsage(_ pid: Int32) -> (cpu: Double, peakKiB: Int) {
    var cpu = 0.0
    if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
       let close = stat.lastIndex(of: ")") {
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Fields after the command: state(0) ... utime(11) stime(12), in clock ticks.
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
            cpu = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
    var peak = 0
    if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            peak = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
    }
    return (cpu, peak)
}

/// The median of a configuration's runs, with their lowest and highest.
struct Summary {
    let median: Double, lowest: Double, highest: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        lowest = sorted.first ?? 0
        highest = sorted.last ?? 0
    }

    /// `format` of the median, then of the lowest and highest in parentheses when there are several runs.
    func text(_ format: String) -> String {
        let middle = String(format: format, median)
        guard lowest != highest else { return middle }
        return middle + " (" + String(format: format, lowest) + "–" + String(format: format, highest) + ")"
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

/// One load's figures (one line between the child and the parent: `key=value` pairs).
struct LoadResult {
    var messages = 0
    var acked = 0
    var seconds = 0.0
    var p50 = 0.0, p99 = 0.0, p999 = 0.0
    /// ccsd's CPU seconds from the end of the logins to its last `acked` event.
    var ccsdCPU = 0.0
    /// ccsd's CPU seconds from its last `acked` event to its exit.
    var ccsdShutdownCPU = 0.0
    var ccsdPeakKiB = 0
    var emulatorCPU = 0.0
    var violations = "?"
    var ackedPerConnection: [Int] = []

    var rate: Double { Double(acked) / max(seconds, 1e-9) }
    var cpuMicrosPerMessage: Double { ccsdCPU * 1e6 / Double(max(acked, 1)) }

    var line: String {
        "RESULT messages=\(messages) acked=\(acked) seconds=\(seconds) p50=\(p50) p99=\(p99) p999=\(p999) "
            + "ccsd_cpu=\(ccsdCPU) ccsd_shutdown_cpu=\(ccsdShutdownCPU) ccsd_peak_kib=\(ccsdPeakKiB) emulator_cpu=\(emulatorCPU) violations=\(violations) "
            + "per_connection=\(ackedPerConnection.map(String.init).joined(separator: ","))"
    }

    init() {}

    init?(line: String) {
        guard line.hasPrefix("RESULT ") else { return nil }
        var fields: [String: String] = [:]
        for pair in line.dropFirst(7).split(separator: " ") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            fields[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        messages = Int(fields["messages"] ?? "") ?? 0
        acked = Int(fields["acked"] ?? "") ?? 0
        seconds = Double(fields["seconds"] ?? "") ?? 0
        p50 = Double(fields["p50"] ?? "") ?? 0
        p99 = Double(fields["p99"] ?? "") ?? 0
        p999 = Double(fields["p999"] ?? "") ?? 0
        ccsdCPU = Double(fields["ccsd_cpu"] ?? "") ?? 0
        ccsdShutdownCPU = Double(fields["ccsd_shutdown_cpu"] ?? "") ?? 0
        ccsdPeakKiB = Int(fields["ccsd_peak_kib"] ?? "") ?? 0
        emulatorCPU = Double(fields["emulator_cpu"] ?? "") ?? 0
        violations = fields["violations"] ?? "?"
        ackedPerConnection = (fields["per_connection"] ?? "").split(separator: ",").compactMap { Int($0) }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
}

/// Sends one command line to the emulator's control channel and returns its one-line answer.
func controlCommand(port: Int, _ command: String) -> String? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let text = Array((command + "\n").utf8)
    guard write(fd, text, text.count) == text.count else { return nil }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !answer.contains(0x0A) {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        answer += buffer[0..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}

/// One load: starts the emulator and ccsd, waits until every connection logged in, writes `messages`
/// downstream messages (at `rate` per second, 0 = as fast as ccsd takes them), reads the events to the end.
func runLoad(store: String, connections: Int, messages: Int, rate: Int, options: BenchOptions, binaries: URL) throws -> LoadResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let keyFile = directory.appendingPathComponent("server-key").path
    try "bench-\(UUID().uuidString)".write(toFile: keyFile, atomically: true, encoding: .utf8)
    let readyFile = directory.appendingPathComponent("ready.json").path
    let statsFile = directory.appendingPathComponent("stats.json").path
    let perConnectionFile = directory.appendingPathComponent("per-connection.json").path

    let emulator = Process()
    emulator.executableURL = binaries.appendingPathComponent("ccs-emulator")
    emulator.arguments = ["--listen", "127.0.0.1:0", "--sender-id", "123456789012", "--server-key-file", keyFile,
                          "--generate-ca", directory.path, "--ack-latency-ms", "\(options.ackLatencyMilliseconds)",
                          "--receipts", "off", "--ready-file", readyFile, "--stats-file", statsFile,
                          "--acked-per-connection-file", perConnectionFile, "--control-port", "0"]
    emulator.standardError = FileHandle.nullDevice
    try emulator.run()
    defer { if emulator.isRunning { emulator.terminate() } }
    var port: Int?, controlPort: Int?
    for _ in 0..<500 where port == nil {
        if let data = FileManager.default.contents(atPath: readyFile), let ready = try? JSONValue.parse(data),
           let first = ready["ports"]?.arrayValue?.first?.intValue {
            port = Int(first)
            controlPort = ready["control_port"]?.intValue.map(Int.init)
        } else {
            usleep(20_000)
        }
    }
    guard let port, let controlPort else { throw BenchError(description: "the emulator did not start") }

    let ccsd = Process()
    ccsd.executableURL = binaries.appendingPathComponent("ccsd")
    ccsd.arguments = ["run", "--endpoint", "127.0.0.1:\(port)", "--ca-file", directory.appendingPathComponent("ca.pem").path,
                      "--sender-id", "123456789012", "--server-key-file", keyFile, "--connections", "\(connections)",
                      "--input", "-", "--events", "-", "--exit-when-done", "--log-level", "warning",
                      "--store", store, "--state-dir", directory.appendingPathComponent("state").path]
        // CCSD_BENCH_CCSD_ARGS: more `ccsd run` arguments, for experiments (e.g. "--max-queued 1000").
        + (ProcessInfo.processInfo.environment["CCSD_BENCH_CCSD_ARGS"]?.split(separator: " ").map(String.init) ?? [])
    let input = Pipe(), output = Pipe()
    ccsd.standardInput = input
    ccsd.standardOutput = output
    try ccsd.run()

    // Every connection logged in before the input starts (1,000 handshakes take a while). Waited for on the
    // writer's thread, while this one reads ccsd's events from the start: a events pipe nobody reads would
    // block ccsd once it holds 64 KiB.
    let cpuAtLogin = Mutex(0.0)
    let loginFailure = Mutex<String?>(nil)
    let writer = Thread {
        var loggedIn = false
        for _ in 0..<3000 where !loggedIn {  // 300 s
            if let answer = controlCommand(port: controlPort, "stats"), let value = try? JSONValue.parse(answer),
               let count = value["stats"]?["authenticated"]?.intValue, count >= connections {
                loggedIn = true
            } else {
                usleep(100_000)
            }
        }
        guard loggedIn else {
            loginFailure.withLock { $0 = "ccsd did not log \(connections) connections in within 300 s" }
            try? input.fileHandleForWriting.close()
            ccsd.terminate()
            return
        }
        // CPU per message counts from here: the handshakes and logins (1,000 of them at most) are not messages.
        cpuAtLogin.withLock { $0 = processCPUSeconds(ccsd.processIdentifier) ?? procUsage(ccsd.processIdentifier).cpu }
        // The lines are built as bytes into one reused buffer and written with write(2): this thread shares the
        // 2 cores with ccsd and the emulator, so it should cost them as little as it can. The bytes and the
        // schedule are what they were with `String` lines (slices of 10 on schedule when paced).
        var batch = InputLines()
        let fd = input.fileHandleForWriting.fileDescriptor
        let start = monotonicSeconds()
        for i in 0..<messages {
            if rate > 0, i % 10 == 0 {
                // Paced: write in slices of 10 on schedule.
                batch.write(to: fd)
                let due = start + Double(i) / Double(rate)
                let wait = due - monotonicSeconds()
                if wait > 0 { usleep(UInt32(wait * 1e6)) }
            }
            batch.append(message: i)
            if batch.count > 60_000 { batch.write(to: fd) }
        }
        batch.write(to: fd)
        try? input.fileHandleForWriting.close()
    }
    writer.start()

    var acceptedAt = [Double](repeating: 0, count: messages)
    var latencies: [Double] = []
    latencies.reserveCapacity(messages)
    var firstAccepted = 0.0, lastAcked = 0.0
    // ccsd's CPU clock when its last `acked` event is read: CPU per message counts to here, not to its exit
    // (closing the streams and the store is not per-message work).
    var cpuAtLastAck: Double?
    // The events are read with read(2) into one buffer and scanned as bytes (EventScan): this process runs on
    // the same cores as ccsd and the emulator, so its cost per event must stay far below theirs. Each chunk's
    // events are timed when the chunk is read, as before.
    var scan = EventScan(messages: messages)
    let fd = output.fileHandleForReading.fileDescriptor
    while true {
        let count = scan.read(fd)
        if count < 0, errno == EINTR { continue }
        if count <= 0 { break }
        let now = monotonicSeconds()
        scan.forEachEvent { kind, index in
            switch kind {
            case .accepted:
                acceptedAt[index] = now
                if firstAccepted == 0 { firstAccepted = now }
            case .acked:
                latencies.append(now - acceptedAt[index])
                lastAcked = now
                if latencies.count == messages { cpuAtLastAck = processCPUSeconds(ccsd.processIdentifier) }
            }
        }
    }
    ccsd.waitUntilExit()
    if let failure = loginFailure.withLock({ $0 }) { throw BenchError(description: failure) }
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    let emulatorUsage = procUsage(emulator.processIdentifier)
    emulator.terminate()
    emulator.waitUntilExit()

    var result = LoadResult()
    result.messages = messages
    result.acked = latencies.count
    result.seconds = lastAcked - firstAccepted
    latencies.sort()
    result.p50 = percentile(latencies, 0.5)
    result.p99 = percentile(latencies, 0.99)
    result.p999 = percentile(latencies, 0.999)
    // The emulator is not waited for yet when ccsd exits: the children's usage is ccsd's alone.
    let cpuAtExit = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    result.ccsdCPU = (cpuAtLastAck ?? cpuAtExit) - cpuAtLogin.withLock { $0 }
    result.ccsdShutdownCPU = cpuAtLastAck.map { cpuAtExit - $0 } ?? 0
    result.ccsdPeakKiB = Int(usage.ru_maxrss)
    result.emulatorCPU = emulatorUsage.cpu
    if let data = FileManager.default.contents(atPath: statsFile), let stats = try? JSONValue.parse(data) {
        result.violations = stats["flow_control_violations"].map { $0.serialized() } ?? "?"
    }
    if let data = FileManager.default.contents(atPath: perConnectionFile), let value = try? JSONValue.parse(data) {
        result.ackedPerConnection = value["acked_per_connection"]?.arrayValue?.compactMap { $0.intValue.map(Int.init) } ?? []
    }
    return result
}

/// Runs one load in a child process (so that its children's CPU and peak RSS are its own).
func runChild(store: String, connections: Int, messages: Int, rate: Int, options: BenchOptions) -> LoadResult? {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--messages", "\(messages)", "--ack-latency-ms", "\(options.ackLatencyMilliseconds)",
                       "--one", store, "\(connections)", "\(rate)"]
    let output = Pipe()
    child.standardOutput = output
    do { try child.run() } catch { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    child.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    if let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) { return LoadResult(line: String(line)) }
    FileHandle.standardError.write(Data("ccsd-bench: \(store) × \(connections): \(text)\n".utf8))
    return nil
}

if CommandLine.arguments.dropFirst().first == "json-parse" { JSONParseBench.run(Array(CommandLine.arguments.dropFirst(2))) }
let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
if CommandLine.arguments.dropFirst().first == "emulator" { EmulatorLoad.run(Array(CommandLine.arguments.dropFirst(2)), binaries: binaries) }
let options = parseOptions()
// 1,000 connections need more descriptors than the usual soft limit; ccsd and the emulator inherit it.
OpenFileLimit.raiseToHardLimit()

if let one = options.one {
    do {
        let result = try runLoad(store: one.store, connections: one.connections, messages: options.messages, rate: one.rate,
                                 options: options, binaries: binaries)
        print(result.line)
        exit(result.acked == result.messages ? 0 : 1)
    } catch {
        print("error: \(error)")
        exit(1)
    }
}

let started = monotonicSeconds()
let header = "| connections | store | flood msgs/s | ccsd CPU µs/msg | ccsd peak RSS MiB (flood) | paced msgs/s | p50 ms | p99 ms | p99.9 ms | ccsd peak RSS MiB (paced) | acked per connection min / median / max | flow-control violations |"
if options.markdown {
    print(header)
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
} else {
    print("ccsd-bench: \(options.messages) messages per flood, paced runs of \(options.pacedSeconds) s at half the flood's rate, ack latency \(options.ackLatencyMilliseconds) ms, binaries in \(binaries.path)")
    print(header)
}
fflush(nil)
var failed = false
for connections in options.connections {
    for store in options.stores {
        // One retry per run: on a loaded machine a start can fail (handshakes timing out), which says nothing of ccsd.
        func load(rate: Int, messages: Int) -> LoadResult? {
            let first = runChild(store: store, connections: connections, messages: messages, rate: rate, options: options)
            return first.flatMap { $0.acked == $0.messages ? $0 : nil }
                ?? runChild(store: store, connections: connections, messages: messages, rate: rate, options: options)
        }
        let floods = (0..<options.runs).compactMap { _ in load(rate: 0, messages: options.messages) }
        guard floods.count == options.runs, floods.allSatisfy({ $0.acked == $0.messages }) else {
            print("| \(connections) | \(store) | failed (see stderr) |")
            failed = true
            continue
        }
        let floodRate = Summary(floods.map(\.rate))
        let pacedRate = max(Int(floodRate.median / 2), 1)
        let pacedMessages = min(options.messages, max(1000, Int(Double(pacedRate) * options.pacedSeconds)))
        let paced = (0..<options.runs).compactMap { _ in load(rate: pacedRate, messages: pacedMessages) }
        failed = failed || paced.count != options.runs || paced.contains { $0.acked != $0.messages }
        // Fairness from the flood whose rate is the median.
        let middle = floods.sorted { $0.rate < $1.rate }[floods.count / 2]
        let spread = middle.ackedPerConnection.sorted()
        let fairness = spread.isEmpty ? "?" : "\(spread.first!) / \(spread[spread.count / 2]) / \(spread.last!)"
        let pacedText = paced.isEmpty ? "failed | | | |" : String(
            format: "%.0f | %.2f | %@ | %.2f | %.1f", Summary(paced.map(\.rate)).median,
            Summary(paced.map(\.p50)).median * 1000, Summary(paced.map { $0.p99 * 1000 }).text("%.2f"),
            Summary(paced.map(\.p999)).median * 1000, Double(paced.map(\.ccsdPeakKiB).max()!) / 1024)
        let violations = Set((floods + paced).map(\.violations)).sorted().joined(separator: ", ")
        print(String(format: "| %d | %@ | %@ | %@ | %.1f | %@ | %@ | %@ |", connections, store, floodRate.text("%.0f"),
                     Summary(floods.map(\.cpuMicrosPerMessage)).text("%.1f"),
                     Double(floods.map(\.ccsdPeakKiB).max()!) / 1024, pacedText, fairness, violations))
        fflush(nil)
    }
}
if !options.markdown {
    print(String(format: "total %.0f s", monotonicSeconds() - started))
}
exit(failed ? 1 : 0)

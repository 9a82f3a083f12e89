// ccsd-bench: pushes N downstream messages through ccsd to the bundled CCS emulator (no ack delay) and
// reports throughput, accept-to-ack latency, CPU and peak memory of both processes.
//
//   swift build -c release && .build/release/ccsd-bench --messages 100000 --connections 1,4 [--store memory,sqlite] [--rate 10000]
//
// `--store` lists the stores to compare in the same run (default both): `memory` keeps nothing across a restart;
// `sqlite` is the durable default (each run gets a fresh state directory; synchronous FULL, group commit).
// ccsd and the emulator run as separate processes (release builds next to this binary), so each one's
// CPU time and peak RSS are its own. Latency is measured from the `accepted` event to the `acked` event as
// this driver reads them from ccsd's events outlet.
import CCS
import Foundation

struct BenchOptions {
    var messages = 50_000
    var connections = [1, 4]
    var stores = ["memory", "sqlite"]
    var ackLatencyMilliseconds = 0
    /// Messages per second written to ccsd's input; 0 = as fast as possible (a flood: latency then
    /// includes the wait in ccsd's queue).
    var rate = 0
    /// Internal: print only the table row (one configuration per child process).
    var rowOnly = false
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
        case "--row-only": options.rowOnly = true
        case "--rate": options.rate = Int(arguments.next() ?? "") ?? 0
        default:
            FileHandle.standardError.write(Data("usage: ccsd-bench [--messages N] [--connections 1,4] [--store memory,sqlite] [--ack-latency-ms N] [--rate MSGS_PER_S]\n".utf8))
            exit(2)
        }
    }
    return options
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
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

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

struct Result {
    var store: String
    var connections: Int
    var messages: Int
    var acked: Int
    var seconds: Double
    var p50: Double
    var p99: Double
    var ccsdCPU: Double
    var ccsdPeakKiB: Int
    var emulatorCPU: Double
    var emulatorPeakKiB: Int
    var violations: String
}

func run(store: String, connections: Int, options: BenchOptions, binaries: URL) throws -> Result {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let keyFile = directory.appendingPathComponent("server-key").path
    try "bench-\(UUID().uuidString)".write(toFile: keyFile, atomically: true, encoding: .utf8)
    let readyFile = directory.appendingPathComponent("ready.json").path
    let statsFile = directory.appendingPathComponent("stats.json").path

    let emulator = Process()
    emulator.executableURL = binaries.appendingPathComponent("ccs-emulator")
    emulator.arguments = ["--listen", "127.0.0.1:0", "--sender-id", "123456789012", "--server-key-file", keyFile,
                          "--generate-ca", directory.path, "--ack-latency-ms", "\(options.ackLatencyMilliseconds)",
                          "--receipts", "off", "--ready-file", readyFile, "--stats-file", statsFile]
    emulator.standardError = FileHandle.nullDevice
    try emulator.run()
    defer { if emulator.isRunning { emulator.terminate() } }
    var ports: [Int] = []
    for _ in 0..<500 where ports.isEmpty {
        if let data = FileManager.default.contents(atPath: readyFile), let ready = try? JSONValue.parse(data),
           let list = ready["ports"]?.arrayValue {
            ports = list.compactMap { $0.intValue.map(Int.init) }
        } else {
            usleep(20_000)
        }
    }
    guard let port = ports.first else { throw NSError(domain: "ccsd-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "emulator did not start"]) }

    let ccsd = Process()
    ccsd.executableURL = binaries.appendingPathComponent("ccsd")
    ccsd.arguments = ["run", "--endpoint", "127.0.0.1:\(port)", "--ca-file", directory.appendingPathComponent("ca.pem").path,
                      "--sender-id", "123456789012", "--server-key-file", keyFile, "--connections", "\(connections)",
                      "--input", "-", "--events", "-", "--exit-when-done", "--log-level", "warning",
                      "--store", store, "--state-dir", directory.appendingPathComponent("state").path]
    let input = Pipe(), output = Pipe()
    ccsd.standardInput = input
    ccsd.standardOutput = output
    try ccsd.run()

    let messages = options.messages
    let rate = options.rate
    let writer = Thread {
        var batch = ""
        let start = monotonicSeconds()
        for i in 0..<messages {
            if rate > 0, i % 100 == 0 {
                // Paced: write in slices of 100 on schedule.
                if !batch.isEmpty {
                    input.fileHandleForWriting.write(Data(batch.utf8))
                    batch = ""
                }
                let due = start + Double(i) / Double(rate)
                let wait = due - monotonicSeconds()
                if wait > 0 { usleep(UInt32(wait * 1e6)) }
            }
            batch += "{\"to\":\"bench-token-\(i % 1000)-APA91bHPRgkFLJu4x\",\"message_id\":\"b-\(i)\",\"data\":{\"score\":\"\(i)\",\"text\":\"benchmark payload <&>\"},\"time_to_live\":600}\n"
            if batch.utf8.count > 60_000 {
                input.fileHandleForWriting.write(Data(batch.utf8))
                batch = ""
            }
        }
        input.fileHandleForWriting.write(Data(batch.utf8))
        try? input.fileHandleForWriting.close()
    }
    writer.start()

    var acceptedAt = [Double](repeating: 0, count: messages)
    var latencies: [Double] = []
    latencies.reserveCapacity(messages)
    var firstAccepted = 0.0, lastAcked = 0.0
    var pending = Data()
    let handle = output.fileHandleForReading
    while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        let now = monotonicSeconds()
        while let newline = pending.firstIndex(of: 0x0A) {
            let line = pending[pending.startIndex..<newline]
            pending.removeSubrange(pending.startIndex...newline)
            // Cheap field extraction: events are compact JSON with sorted keys.
            guard let text = String(data: line, encoding: .utf8), let idRange = text.range(of: "\"message_id\":\"b-") else { continue }
            let digits = text[idRange.upperBound...].prefix { $0.isNumber }
            guard let index = Int(digits), index < messages else { continue }
            if text.hasPrefix("{\"event\":\"accepted\"") {
                acceptedAt[index] = now
                if firstAccepted == 0 { firstAccepted = now }
            } else if text.hasPrefix("{\"event\":\"acked\"") {
                latencies.append(now - acceptedAt[index])
                lastAcked = now
            }
        }
    }
    ccsd.waitUntilExit()
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    let ccsdCPU = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    let emulatorUsage = procUsage(emulator.processIdentifier)
    emulator.terminate()
    emulator.waitUntilExit()
    var violations = "?"
    if let data = FileManager.default.contents(atPath: statsFile), let stats = try? JSONValue.parse(data) {
        violations = stats["flow_control_violations"].map { $0.serialized() } ?? "?"
    }
    latencies.sort()
    return Result(store: store, connections: connections, messages: messages, acked: latencies.count, seconds: lastAcked - firstAccepted,
                  p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99),
                  ccsdCPU: ccsdCPU, ccsdPeakKiB: Int(usage.ru_maxrss),
                  emulatorCPU: emulatorUsage.cpu, emulatorPeakKiB: emulatorUsage.peakKiB, violations: violations)
}

if CommandLine.arguments.dropFirst().first == "json-parse" { JSONParseBench.run(Array(CommandLine.arguments.dropFirst(2))) }
let options = parseOptions()
let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
if !options.rowOnly {
print("ccsd-bench: \(options.messages) messages, \(options.rate > 0 ? "\(options.rate) msgs/s offered" : "flood"), ack latency \(options.ackLatencyMilliseconds) ms, binaries in \(binaries.path)")
print("| store | connections | acked | msgs/s | p50 ms | p99 ms | ccsd CPU s/10k | ccsd peak RSS MiB | emulator CPU s/10k | emulator peak RSS MiB | flow-control violations |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
}
fflush(nil)
var failed = false
for connections in options.connections {
  for store in options.stores {
    // Children's usage accumulates: run each configuration in its own process so the numbers stay apart.
    if options.connections.count > 1 || options.stores.count > 1 {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--messages", "\(options.messages)", "--connections", "\(connections)", "--store", store,
                           "--ack-latency-ms", "\(options.ackLatencyMilliseconds)", "--rate", "\(options.rate)", "--row-only"]
        child.environment = ProcessInfo.processInfo.environment
        try child.run()
        child.waitUntilExit()
        failed = failed || child.terminationStatus != 0
        continue
    }
    do {
        let r = try run(store: store, connections: connections, options: options, binaries: binaries)
        let per10k = 10_000 / Double(max(r.messages, 1))
        print(String(format: "| %@ | %d | %d | %.0f | %.2f | %.2f | %.3f | %.1f | %.3f | %.1f | %@ |",
                     r.store, r.connections, r.acked, Double(r.acked) / max(r.seconds, 1e-9), r.p50 * 1000, r.p99 * 1000,
                     r.ccsdCPU * per10k, Double(r.ccsdPeakKiB) / 1024, r.emulatorCPU * per10k,
                     Double(r.emulatorPeakKiB) / 1024, r.violations))
        failed = failed || r.acked != r.messages
        fflush(nil)
    } catch {
        print("error: \(error)")
        failed = true
    }
  }
}
exit(failed ? 1 : 0)

import CCS
import Foundation
import TLS

/// `ccsd-bench emulator [--messages N] [--window W] [--connections C]`: measures the bundled emulator alone,
/// without ccsd. Starts the release `ccs-emulator` (no ack delay, no receipts), opens C TLS connections,
/// logs each in (stream header, SASL PLAIN, bind: ccs-protocol.md §1) and keeps W downstream stanzas in
/// flight on each until N messages in all are acked; prints acks per second and the emulator's CPU per
/// message and peak RSS.
///
/// The driver itself parses no XML: it counts the `</message>` end tags the emulator writes (one per ack)
/// and answers each with the next stanza, built from a prefix, a decimal message_id and a suffix. So its
/// cost per message is a fraction of the emulator's, and the figure is the emulator's capacity.
enum EmulatorLoad {
    static func run(_ arguments: [String], binaries: URL) -> Never {
        var messages = 1_000_000, window = 100, connections = 1
        var iterator = arguments.makeIterator()
        while let flag = iterator.next() {
            switch flag {
            case "--messages": messages = Int(iterator.next() ?? "") ?? messages
            case "--window": window = Int(iterator.next() ?? "") ?? window
            case "--connections": connections = Int(iterator.next() ?? "") ?? connections
            default:
                FileHandle.standardError.write(Data("usage: ccsd-bench emulator [--messages N] [--window W] [--connections C]\n".utf8))
                exit(2)
            }
        }
        OpenFileLimit.raiseToHardLimit()
        do {
            let emulator = try EmulatorProcess(binaries: binaries, extraArguments: [])
            defer { emulator.stop() }
            // CCSD_BENCH_PERF_STAT=FILE: counts the emulator's user-space instructions with `perf stat` (attached
            // now, stopped when the load is done). Stable on a shared machine, unlike time: run two message
            // counts and divide the difference by the difference of the counts.
            var perf: Process?
            if let file = ProcessInfo.processInfo.environment["CCSD_BENCH_PERF_STAT"] {
                let counter = Process()
                counter.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                counter.arguments = ["perf", "stat", "-e", "instructions:u", "-x", ",", "-o", file,
                                     "-p", "\(emulator.process.processIdentifier)"]
                try counter.run()
                perf = counter
                usleep(300_000)
            }
            let loop = EventLoop(label: "ccsd-bench-emulator-load")
            let done = DispatchSemaphore(value: 0)
            let shared = LoadState(total: messages, done: done)
            let (connections, window) = (connections, window)
            let (senderID, serverKey, port, caFile) = (emulator.senderID, emulator.serverKey, emulator.port, emulator.caFile)
            let cpuBefore = procUsage(emulator.process.processIdentifier).cpu
            loop.execute {
                shared.started = monotonicSeconds()
                for index in 0..<connections {
                    let driver = LoadConnection(index: index, window: window, senderID: senderID,
                                                serverKey: serverKey, state: shared)
                    shared.drivers.append(driver)
                    driver.tls = TLSConnection.connect(host: "127.0.0.1", port: port,
                                                       configuration: TLSClientConfiguration(caFile: caFile),
                                                       on: loop, delegate: driver)
                }
            }
            if done.wait(timeout: .now() + 600) == .timedOut {
                print("emulator load: timed out after 600 s")
                exit(1)
            }
            let (seconds, acked, failure, perConnection) = loop.submitAndWait {
                (shared.finished - shared.loggedIn, shared.acked, shared.failure, shared.drivers.map(\.acked))
            }
            let usage = procUsage(emulator.process.processIdentifier)
            if let perf {
                kill(perf.processIdentifier, SIGINT)
                perf.waitUntilExit()
            }
            let stats = emulator.stop()
            if let failure {
                print("emulator load: \(failure)")
                exit(1)
            }
            let sorted = perConnection.sorted()
            print(String(format: "emulator alone: %d connections, window %d, %d messages acked in %.2f s: %.0f acks/s; "
                         + "emulator CPU %.2f µs/message, peak RSS %.1f MiB; acks per connection min %d median %d max %d; "
                         + "flow-control violations %@, duplicates %@",
                         connections, window, acked, seconds, Double(acked) / max(seconds, 1e-9),
                         (usage.cpu - cpuBefore) * 1e6 / Double(max(acked, 1)), Double(usage.peakKiB) / 1024,
                         sorted.first ?? 0, sorted[sorted.count / 2], sorted.last ?? 0,
                         stats?["flow_control_violations"]?.serialized() ?? "?",
                         stats?["duplicate_message_ids"]?.serialized() ?? "?"))
            exit(acked == messages ? 0 : 1)
        } catch {
            print("emulator load: \(error)")
            exit(1)
        }
    }
}

/// The shared tally of one load run.
final class LoadState: @unchecked Sendable {
    // @unchecked Sendable: touched only on the driver's loop (the main thread reads it after `done`, via the loop).
    let total: Int
    let done: DispatchSemaphore
    var sent = 0
    var acked = 0
    var drivers: [LoadConnection] = []
    var readyCount = 0
    var started = 0.0, loggedIn = 0.0, finished = 0.0
    var failure: String?

    init(total: Int, done: DispatchSemaphore) {
        self.total = total
        self.done = done
    }

    /// The next message index to send, or nil when all are sent.
    func take() -> Int? {
        guard sent < total else { return nil }
        sent += 1
        return sent - 1
    }

    func finish(_ failure: String? = nil) {
        guard finished == 0 else { return }
        finished = monotonicSeconds()
        self.failure = failure
        done.signal()
    }
}

/// One client connection of the load driver: logs in by matching markers in the text, then counts acks.
final class LoadConnection: TLSConnectionDelegate {
    enum Step { case header, auth, restart, bind, traffic }
    let index: Int
    let window: Int
    let senderID: String
    let serverKey: String
    unowned let state: LoadState
    var tls: TLSConnection?
    var step = Step.header
    var text: [UInt8] = []
    var acked = 0
    /// The last bytes of the previous read, so that an end tag split across reads is still counted.
    var carry: [UInt8] = []
    var out: [UInt8] = []
    static let endTag = Array("</message>".utf8)
    static let prefix = Array(#"<message id=""><gcm xmlns="google:mobile:data">{"to":"bench-token-APA91bHPRgkFLJu4x","message_id":"e-"#.utf8)
    static let suffix = Array(#"","data":{"score":"7","text":"benchmark payload &lt;&amp;&gt;"},"time_to_live":600}</gcm></message>"#.utf8)

    init(index: Int, window: Int, senderID: String, serverKey: String, state: LoadState) {
        self.index = index
        self.window = window
        self.senderID = senderID
        self.serverKey = serverKey
        self.state = state
    }

    func write(_ string: String) {
        do { try tls?.write(string) } catch { state.finish("write failed: \(error)") }
    }

    func tlsConnectionDidBecomeReady(_ connection: TLSConnection) {
        write(header)
    }

    var header: String {
        #"<stream:stream to="gcm.googleapis.com" version="1.0" xmlns="jabber:client" xmlns:stream="http://etherx.jabber.org/streams">"#
    }

    func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
        guard step == .traffic else { return negotiate(bytes) }
        var count = 0
        if !carry.isEmpty {
            // Tags split across the boundary: look at the carry plus the first bytes of this read.
            let joined = carry + Array(bytes.prefix(Self.endTag.count - 1))
            count += occurrences(in: UnsafeRawBufferPointer(start: nil, count: 0), orArray: joined)
        }
        count += occurrences(in: bytes, orArray: nil)
        carry = Array(bytes.suffix(Self.endTag.count - 1))
        acknowledged(count)
    }

    private func occurrences(in bytes: UnsafeRawBufferPointer, orArray array: [UInt8]?) -> Int {
        let tag = Self.endTag
        func scan(_ buffer: UnsafeRawBufferPointer) -> Int {
            var found = 0, offset = 0
            guard buffer.count >= tag.count, let base = buffer.baseAddress else { return 0 }
            while offset + tag.count <= buffer.count {
                guard let hit = memchr(base + offset, 0x3C, buffer.count - offset - tag.count + 1) else { break }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, tag, tag.count) == 0 { found += 1; offset = at + tag.count } else { offset = at + 1 }
            }
            return found
        }
        if let array { return array.withUnsafeBytes(scan) }
        return scan(bytes)
    }

    private func acknowledged(_ count: Int) {
        guard count > 0 else { return }
        acked += count
        state.acked += count
        if state.acked >= state.total { return state.finish() }
        out.removeAll(keepingCapacity: true)
        for _ in 0..<count {
            guard let next = state.take() else { break }
            appendStanza(next)
        }
        flush()
    }

    private func appendStanza(_ n: Int) {
        out.append(contentsOf: Self.prefix)
        var digits: [UInt8] = []
        var value = n
        repeat {
            digits.append(UInt8(48 + value % 10))
            value /= 10
        } while value > 0
        out.append(contentsOf: digits.reversed())
        out.append(contentsOf: Self.suffix)
    }

    private func flush() {
        guard !out.isEmpty else { return }
        do { try out.withUnsafeBytes { bytes throws(TLSError) in try tls?.write(bytes) } } catch { state.finish("write failed: \(error)") }
    }

    private func negotiate(_ bytes: UnsafeRawBufferPointer) {
        text.append(contentsOf: bytes)
        let seen = String(decoding: text, as: UTF8.self)
        switch step {
        case .header where seen.contains("</stream:features>"):
            text = []
            step = .auth
            let plain = Data("\0\(senderID)@gcm.googleapis.com\0\(serverKey)".utf8).base64EncodedString()
            write(#"<auth mechanism="PLAIN" xmlns="urn:ietf:params:xml:ns:xmpp-sasl">\#(plain)</auth>"#)
        case .auth where seen.contains("<success"):
            text = []
            step = .restart
            write(header)
        case .auth where seen.contains("<failure"):
            state.finish("SASL failed: \(seen)")
        case .restart where seen.contains("</stream:features>"):
            text = []
            step = .bind
            write(#"<iq type="set" id="bind-1"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"/></iq>"#)
        case .bind where seen.contains("</iq>"):
            text = []
            step = .traffic
            state.readyCount += 1
            if state.readyCount == state.drivers.count {
                // Every connection is bound: start the clock and fill every window.
                state.loggedIn = monotonicSeconds()
                for driver in state.drivers { driver.fill() }
            }
        default:
            break
        }
    }

    func fill() {
        out.removeAll(keepingCapacity: true)
        for _ in 0..<window {
            guard let next = state.take() else { break }
            appendStanza(next)
        }
        flush()
    }

    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) {
        if state.finished == 0 { state.finish("connection \(index) closed: \(error.map { "\($0)" } ?? "clean")") }
    }
}

/// The release `ccs-emulator` as a child process (no ack delay, receipts off), with its port and CA.
final class EmulatorProcess {
    let process = Process()
    let directory: URL
    let port: Int
    let senderID = "123456789012"
    let serverKey: String
    var keyFile: String { directory.appendingPathComponent("server-key").path }
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    var statsFile: String { directory.appendingPathComponent("stats.json").path }

    init(binaries: URL, extraArguments: [String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        serverKey = "bench-\(UUID().uuidString)"
        try serverKey.write(toFile: directory.appendingPathComponent("server-key").path, atomically: true, encoding: .utf8)
        let readyFile = directory.appendingPathComponent("ready.json").path
        // CCSD_BENCH_EMULATOR_WRAPPER (e.g. "valgrind --tool=lackey"): runs the emulator under that command.
        let wrapper = ProcessInfo.processInfo.environment["CCSD_BENCH_EMULATOR_WRAPPER"]?
            .split(separator: " ").map(String.init) ?? []
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = wrapper + [binaries.appendingPathComponent("ccs-emulator").path] + ["--listen", "127.0.0.1:0", "--sender-id", senderID,
                             "--server-key-file", directory.appendingPathComponent("server-key").path,
                             "--generate-ca", directory.path, "--ack-latency-ms", "0", "--receipts", "off",
                             "--ready-file", readyFile, "--stats-file", directory.appendingPathComponent("stats.json").path]
            + extraArguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found: Int?
        for _ in 0..<6000 where found == nil {  // 2 minutes: under valgrind the start is slow
            if let data = FileManager.default.contents(atPath: readyFile), let ready = try? JSONValue.parse(data),
               let first = ready["ports"]?.arrayValue?.first?.intValue {
                found = Int(first)
            } else {
                usleep(20_000)
            }
        }
        guard let found else {
            process.terminate()
            throw NSError(domain: "ccsd-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "emulator did not start"])
        }
        port = found
    }

    /// Stops the emulator (SIGTERM, then waits) and returns its stats file, parsed. Idempotent.
    @discardableResult
    func stop() -> JSONValue? {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        let stats = FileManager.default.contents(atPath: statsFile).flatMap { try? JSONValue.parse($0) }
        try? FileManager.default.removeItem(at: directory)
        return stats
    }
}

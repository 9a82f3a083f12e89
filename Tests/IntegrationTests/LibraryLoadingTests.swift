import Foundation
import Testing

/// The C libraries ccsd loads with dlopen on first use, seen in the running process's `/proc/PID/maps`:
/// `ccsd run` (no API, no webhook, not under systemd) maps none of them; `ccsd serve` maps libmicrohttpd (its
/// API) and, only when the environment names systemd (`NOTIFY_SOCKET`), libsystemd; neither maps libcurl
/// without a webhook. Each one that is not loaded keeps what it pulls in out too (GnuTLS for libmicrohttpd).
@Suite(.serialized) struct LibraryLoadingTests {
    /// The file names (up to `.so`) of the shared objects mapped by `pid`.
    static func mappedLibraries(_ pid: Int32) -> Set<String> {
        // Read to its end: a /proc file says its size is 0, and a read by size stops short.
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else { return [] }
        defer { try? file.close() }
        let maps = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
        var names: Set<String> = []
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let file = line[slash...].split(separator: "/").last.map(String.init) ?? ""
            if let so = file.range(of: ".so") { names.insert(String(file[..<so.lowerBound])) }
        }
        return names
    }

    @Test func runMapsNeitherTheAPINorSystemdNorCurlLibraries() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        let events = bed.directory + "/events.jsonl"
        let process = Process()
        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["run", "--endpoint", "localhost:\(bed.endpointPort)", "--ca-file", bed.directory + "/ca.pem",
                             "--sender-id", ServeBed.senderID, "--server-key-file", bed.directory + "/server-key",
                             "--store", "memory", "--events", events, "--exit-when-done"]
        process.environment = [:]
        let input = Pipe()
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        input.fileHandleForWriting.write(Data((ServeAPITests.message("lib-1") + "\n").utf8))
        // One message acked: the connection, TLS, the store and the events outlet have all done their work.
        #expect(pollUntil(timeout: 20) {
            ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").contains(#""event":"acked""#)
        })
        let mapped = Self.mappedLibraries(process.processIdentifier)
        try input.fileHandleForWriting.close()
        #expect(process.exitStatus(waitingAtMost: 20) == 0)

        #expect(mapped.contains("libssl"), "the maps were not read: \(mapped.sorted())")
        for library in ["libmicrohttpd", "libgnutls", "libsystemd", "libgcrypt", "libcurl"] {
            #expect(!mapped.contains(library), "ccsd run mapped \(library): \(mapped.sorted())")
        }
    }

    @Test func serveMapsLibmicrohttpdAndLibsystemdOnlyUnderSystemd() throws {
        let bed = try ServeBed()
        defer { bed.cleanUp() }
        try bed.start()
        #expect(bed.waitUntilReady())
        let outside = Self.mappedLibraries(bed.pid)
        #expect(bed.stop() == 0)
        #expect(outside.contains("libmicrohttpd"), "\(outside.sorted())")
        #expect(!outside.contains("libsystemd") && !outside.contains("libcurl"), "\(outside.sorted())")

        let reader = try NotifySocketReader(path: bed.directory + "/notify.sock") { _, _ in }
        defer { reader.stop() }
        try bed.start(environment: ["NOTIFY_SOCKET": reader.path])
        #expect(bed.waitUntilReady())
        #expect(pollUntil(timeout: 10) { reader.datagrams.contains { $0.hasPrefix("READY=1") } })
        let underSystemd = Self.mappedLibraries(bed.pid)
        #expect(bed.stop() == 0)
        #expect(underSystemd.contains("libmicrohttpd") && underSystemd.contains("libsystemd"), "\(underSystemd.sorted())")
        #expect(!bed.log.contains("library is missing"), "\(bed.log)")
    }
}

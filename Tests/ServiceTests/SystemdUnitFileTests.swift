import Foundation
import Testing

/// The shipped units (systemd/): `systemd-analyze verify` passes and `systemd-analyze security
/// --offline=true` rates every service at most 2.0, through `scripts/check-units` (which prints the scores).
@Suite struct SystemdUnitFileTests {
    /// The repository root, from this source file (Tests/ServiceTests/ → root).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().standardizedFileURL

    /// Runs `executable` with `arguments`; killed after `timeout` seconds.
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        var output = Data()
        let reader = pipe.fileHandleForReading
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        output.append(reader.readDataToEndOfFile())
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test func unitsVerifyAndRateAtMost2() throws {
        let result = try Self.run("/bin/bash", [Self.root.appendingPathComponent("scripts/check-units").path])
        print(result.output, terminator: "")
        #expect(result.status == 0, "\(result.output)")
        let scores = result.output.split(separator: "\n").compactMap { line -> (String, Double)? in
            guard let match = line.firstMatch(of: #/^systemd exposure: (\S+) ([0-9.]+) /#) else { return nil }
            return (String(match.1), Double(match.2) ?? 99)
        }
        #expect(Set(scores.map(\.0)) == ["ccsd.service", "ccsd@123456789012.service"])
        for (unit, score) in scores { #expect(score <= 2.0, "\(unit) rated \(score)") }
    }

    /// `scripts/check-hardening`: the built `ccsd serve` takes messages through its API socket and delivers
    /// every one as nobody inside the unit's limits that apply without PID 1, notifies readiness, and its
    /// system calls and socket families are all ones the unit allows.
    /// Skipped (exit 77) where it cannot run: not root, no strace.
    @Test func ccsdRunsUnderTheUnitsLimits() throws {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let result = try Self.run("/usr/bin/env", ["CCSD_BIN_DIR=\(bin.path)", "/bin/bash",
                                                   Self.root.appendingPathComponent("scripts/check-hardening").path],
                                  timeout: 120)
        print(result.output, terminator: "")
        #expect(result.status == 0 || result.status == 77, "\(result.output)")
        if result.status == 0 { #expect(result.output.contains("hardening: ok (ccsd serve:")) }
    }

    @Test func unitsRunTheServiceWithTheKeyAsACredential() throws {
        for name in ["ccsd.service", "ccsd@.service"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent("systemd/\(name)"), encoding: .utf8)
            #expect(text.contains("\nType=notify\n"), "\(name)")
            #expect(text.contains("\nExecReload=/bin/kill -HUP $MAINPID\n"), "\(name)")
            #expect(text.contains("\nLoadCredential=server-key:"), "\(name)")
            #expect(text.contains("/usr/local/bin/ccsd serve "), "\(name)")
            #expect(!text.contains("--server-key"), "\(name): the key never on the command line")
        }
    }
}

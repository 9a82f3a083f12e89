import Foundation
import Testing

/// The built executables' command lines: exit codes and messages a person sees.
@Suite struct CommandLineTests {
    /// The directory holding the package's built products (next to this test binary).
    static var binDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Runs a product with `arguments` and no input; returns its exit code and stderr. Bounded: killed by PID after 20 s.
    func run(_ product: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try Self.runProcess(Self.binDirectory.appendingPathComponent(product), arguments, environment: environment)
    }

    /// Runs `executable` with no input, waiting at most `timeout` seconds (then killed by its PID); returns its
    /// exit code and what it wrote to stdout and stderr.
    static func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]? = [:],
                           timeout: Double = 20) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, stdout, stderr)
    }

    @Test func ccsdHelpAndUsageErrors() throws {
        let help = try run("ccsd", ["run", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--endpoint HOST:PORT"))
        let badFlag = try run("ccsd", ["run", "--conections", "2"])
        #expect(badFlag.status == 2)
        #expect(badFlag.stderr.contains("--conections: unknown option (did you mean --connections?)"))
        let unknownCommand = try run("ccsd", ["serve"])
        #expect(unknownCommand.status == 2)
    }

    @Test func ccsdConfigurationErrorsNameTheFieldAndNeverTheKey() throws {
        let missingKey = try run("ccsd", ["run", "--sender-id", "42", "--input", "/dev/null"])
        #expect(missingKey.status == 2)
        #expect(missingKey.stderr.contains("server_key: required"))
        let keyAsSender = try run("ccsd", ["run", "--sender-id", "AAAA-secret-key-value"], environment: ["CCSD_SERVER_KEY": "k"])
        #expect(keyAsSender.status == 2)
        #expect(keyAsSender.stderr.contains("sender_id: must be the numeric sender ID"))
        #expect(!keyAsSender.stderr.contains("AAAA-secret-key-value"))
    }

    @Test func emulatorRefusesUnknownFlags() throws {
        let result = try run("ccs-emulator", ["--bogus"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--bogus"))
    }
}

import CCSEmulator
import Foundation
import Testing

/// `ccsd run` (the built binary) reloads its configuration on SIGHUP: applied changes are logged, a change
/// that needs a restart is refused naming the field, and the run carries on to a clean SIGTERM stop.
@Suite struct RunReloadTests {
    @Test func sighupAppliesOrRefusesAndTheRunCarriesOn() async throws {
        let directory = NSTemporaryDirectory() + "ccsd-sighup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = "sighup-key-\(UUID().uuidString)"
        try Data(key.utf8).write(to: URL(fileURLWithPath: directory + "/server-key"))
        let emulator = CCSEmulator(configuration: EmulatorConfiguration(
            listen: [.init(host: "127.0.0.1", port: 0)], senderID: "123456789012", serverKey: key, caDirectory: directory))
        let ports = try emulator.start()
        defer { emulator.stop() }
        let configPath = directory + "/ccsd.json"
        func writeConfig(senderID: String = "123456789012", connections: Int, logLevel: String) throws {
            let text = """
                {"sender_id": "\(senderID)", "primary_endpoint": "localhost:\(ports[0])", "secondary_endpoint": null,
                 "ca_file": "\(directory)/ca.pem", "server_key_file": "\(directory)/server-key",
                 "connections": \(connections), "log_level": "\(logLevel)", "store": "memory"}
                """
            try Data(text.utf8).write(to: URL(fileURLWithPath: configPath))
        }
        try writeConfig(connections: 1, logLevel: "info")

        let process = Process()
        process.executableURL = CommandLineTests.binDirectory.appendingPathComponent("ccsd")
        process.arguments = ["run", "--config", configPath, "--input", "-", "--events", directory + "/events.jsonl"]
        process.environment = [:]
        let input = Pipe()
        process.standardInput = input
        let logPath = directory + "/ccsd.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        guard await waitUntil("the first login", { emulator.stats().authenticated == 1 }) else { return }
        try writeConfig(connections: 2, logLevel: "debug")
        kill(process.processIdentifier, SIGHUP)
        guard await waitUntil("the reload", { log().contains("configuration reloaded") }) else { return }
        #expect(log().contains("changes=\"connections 1→2; log_level info→debug\""))
        guard await waitUntil("the second login", { emulator.stats().authenticated == 2 }) else { return }

        try writeConfig(senderID: "999", connections: 2, logLevel: "debug")
        kill(process.processIdentifier, SIGHUP)
        guard await waitUntil("the refusal", { log().contains("configuration reload refused") }) else { return }
        #expect(log().contains("field=sender_id"))
        #expect(!log().contains(key))

        input.fileHandleForWriting.write(Data(#"{"to":"tok-1-APA91b","message_id":"after-reload","data":{"k":"v"}}"#.utf8 + [0x0A]))
        guard await waitUntil("the ack", {
            ((try? String(contentsOfFile: directory + "/events.jsonl", encoding: .utf8)) ?? "").contains("\"acked\"")
        }) else { return }
        kill(process.processIdentifier, SIGTERM)
        guard await waitUntil("the stop", { !process.isRunning }) else { return }
        #expect(process.terminationStatus == 0)
    }
}

import CCS
import Daemon
import Foundation
import Testing

/// The intake is read on the event loop from a pipe and on a thread of its own from a regular file
/// (IntakeReader): the same input gives the same events either way, pausing above `max_queued` included.
@Suite struct IntakeReadPathsTests {
    /// 300 lines: valid ones, some without a message_id, blank ones, invalid JSON, a missing target, lines
    /// over `max_line_bytes`; the last one without its LF.
    static let input: String = {
        var lines: [String] = []
        for index in 0..<300 {
            switch index % 10 {
            case 1: lines.append(#"{"to":"tok-\#(index % 7)","data":{"n":"\#(index)"}}"#)
            case 3: lines.append(index % 20 == 3 ? "" : " \t\r")
            case 5: lines.append(#"{"to":"tok-1","message_id":"bad-\#(index)","data":"#)
            case 7: lines.append(#"{"message_id":"untargeted-\#(index)","data":{}}"#)
            case 9: lines.append(#"{"to":"tok-2","message_id":"long-\#(index)","data":{"p":""# + String(repeating: "y", count: 600) + #""}}"#)
            default: lines.append(#"{"to":"tok-\#(index % 5)","message_id":"m-\#(index)","data":{"n":"\#(index)"}}"#)
            }
        }
        return lines.joined(separator: "\n")
    }()

    /// The accepted and rejected events in order (a message_id given by ccsd without its random prefix), and
    /// the message_ids acked.
    func events(readingFrom source: String) async throws -> (order: [String], acked: Set<String>) {
        let directory = NSTemporaryDirectory() + "ccsd-intake-paths-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/input.jsonl"
        try Self.input.write(toFile: file, atomically: true, encoding: .utf8)
        let run = try DaemonRun(inputPath: source == "file" ? file : nil, store: .memory,
                                emulator: { $0.ackLatencyMilliseconds = 5 },
                                daemon: { $0.maxLineBytes = 512; $0.maxQueued = 16 })
        defer { run.stop(); run.cleanUp() }
        if source == "pipe" {
            // In uneven pieces, so that lines and batches straddle reads.
            let bytes = Array(Self.input.utf8)
            var offset = 0, piece = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + [1, 97, 4000, 13][piece % 4])
                run.inputWriter.write(Data(bytes[offset..<end]))
                offset = end
                piece += 1
            }
            run.endInput()
        }
        #expect(await waitUntil("ccsd done reading from a \(source)", timeout: 60) { run.exited != nil })
        #expect(run.exited == 0)
        var order: [String] = []
        var acked: Set<String> = []
        for event in run.events {
            let name = event["event"]?.stringValue ?? "?"
            var id = event["message_id"]?.stringValue ?? "nil"
            if id.hasPrefix("ccsd-"), let dash = id.lastIndex(of: "-") { id = "ccsd-*" + id[dash...] }
            switch name {
            case "acked": acked.insert(id)
            case "accepted", "rejected":
                order.append("\(name) \(event["line"].map { $0.serialized() } ?? "nil") \(id) \(event["error"]?.stringValue ?? "")")
            default: break
            }
        }
        return (order, acked)
    }

    @Test func aPipeReadOnTheLoopAndAFileReadOnTheThreadGiveTheSameEvents() async throws {
        let fromFile = try await events(readingFrom: "file")
        let fromPipe = try await events(readingFrom: "pipe")
        #expect(fromFile.order.count == 270)  // 300 lines less 30 blank
        #expect(fromFile.order.filter { $0.hasPrefix("rejected") }.count == 90)
        #expect(fromFile.acked.count == 180)
        #expect(fromFile.acked.contains("ccsd-*-30"))
        #expect(fromPipe.order == fromFile.order)
        #expect(fromPipe.acked == fromFile.acked)
    }
}

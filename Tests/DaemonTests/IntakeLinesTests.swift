import CCS
@testable import Daemon
import Foundation
import Testing

/// The intake's line rules (`IntakeLines`), which the loop and the reader thread share: the items do not
/// depend on how the input is split into reads, nor on where a batch is cut.
@Suite struct IntakeLinesTests {
    /// Lines of every kind: valid, without a message_id, blank (spaces, tabs, CR), invalid JSON, invalid
    /// fields, exactly at the bound, one byte over it, far over it, CRLF-ended, and a last line without LF.
    static let input: [UInt8] = {
        func sized(_ id: String, _ bytes: Int) -> String {
            let head = #"{"to":"tok-1","message_id":"\#(id)","data":{"p":""#
            let tail = #""}}"#
            return head + String(repeating: "x", count: bytes - head.utf8.count - tail.utf8.count) + tail
        }
        let lines = [
            #"{"to":"tok-1","message_id":"a","data":{"n":"1"}}"#,
            "",
            " \t\r",
            #"{"to":"tok-2","data":{"n":"no id"}}"#,
            #"{"to":"tok-3","message_id":"b","data":"#,
            #"{"message_id":"c","data":{"n":"no target"}}"#,
            sized("at-limit", 200),
            sized("over-limit", 201),
            sized("far-over", 5000),
            #"{"to":"tok-4","message_id":"crlf","data":{"n":"2"}}"# + "\r",
            #"{"to":"tok-5","data":{"n":"no id either"}}"#,
            #"{"to":"tok-6","message_id":"last","data":{"n":"3"}}"#,
        ]
        return Array(lines.joined(separator: "\n").utf8)
    }()

    /// An item as text: its kind, line, message_id (a generated one as its counter) and error.
    static func describe(_ item: CCSDaemon.IntakeItem) -> String {
        switch item {
        case .message(let message, let line):
            let id = message.messageID ?? "nil"
            return "message \(line) \(id.hasPrefix("gen-") ? id : "[\(id)]") \(message.jsonUTF8().count)"
        case .invalid(let line, let messageID, let error):
            return "invalid \(line) \(messageID ?? "nil") \(error.description)"
        }
    }

    /// Feeds `input` in pieces of the given sizes (cycled), taking at most `limit` items per call.
    static func items(pieces: [Int], limit: Int) -> [String] {
        var lines = IntakeLines(maxLineBytes: 200, idPrefix: "gen-")
        var items: [CCSDaemon.IntakeItem] = []
        var offset = 0, piece = 0
        input.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let end = min(bytes.count, offset + pieces[piece % pieces.count])
                piece += 1
                var start = offset
                while start < end {
                    var batch: [CCSDaemon.IntakeItem] = []
                    let taken = lines.take(from: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), into: &batch, limit: limit)
                    #expect(taken > 0)
                    #expect(batch.count <= limit)
                    items += batch
                    start += taken
                }
                offset = end
            }
        }
        lines.finish(into: &items)
        return items.map(describe)
    }

    @Test func theItemsDoNotDependOnHowTheInputIsSplit() {
        let whole = Self.items(pieces: [Self.input.count], limit: 256)
        #expect(whole.count == 10)
        #expect(whole.first?.hasPrefix("message 1 [a] ") == true)
        #expect(whole.filter { $0.hasPrefix("invalid") }.map { $0.split(separator: " ")[1] } == ["5", "6", "8", "9"])
        #expect(whole.contains { $0.hasPrefix("message 4 gen-1 ") })
        #expect(whole.contains { $0.hasPrefix("message 11 gen-2 ") })
        #expect(whole.contains { $0.hasPrefix("message 7 [at-limit] ") })
        #expect(whole.contains { $0.hasPrefix("message 10 [crlf] ") })
        #expect(whole.last?.hasPrefix("message 12 [last] ") == true)
        #expect(whole.contains("invalid 8 nil the line is longer than 200 bytes (max_line_bytes)"))
        for pieces in [[1], [2], [3, 7], [64], [199, 1, 200, 201], [4096]] {
            for limit in [1, 2, 256] {
                #expect(Self.items(pieces: pieces, limit: limit) == whole, "pieces \(pieces), limit \(limit)")
            }
        }
    }

    /// `take` stops right after the line that fills the batch, so the rest waits for the next batch.
    @Test func takeStopsAfterTheLineThatFillsTheBatch() {
        var lines = IntakeLines(maxLineBytes: 100, idPrefix: "gen-")
        let text = Array("{\"to\":\"t\",\"message_id\":\"x\",\"data\":{}}\n\n{\"to\":\"t\",\"message_id\":\"y\",\"data\":{}}\nrest".utf8)
        var batch: [CCSDaemon.IntakeItem] = []
        let taken = text.withUnsafeBytes { lines.take(from: $0, into: &batch, limit: 1) }
        #expect(taken == text.firstIndex(of: 0x0A)! + 1)
        #expect(batch.count == 1)
        #expect(lines.lineNumber == 1)
    }
}

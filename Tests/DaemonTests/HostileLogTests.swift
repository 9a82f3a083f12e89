import Foundation
import Testing
@testable import Daemon

/// Break-it reproductions of the logger. Each reproduced a bug of the break-it pass before its fix.
@Suite struct HostileLogTests {
    func logged(_ value: String) throws -> String {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let logger = Logger(minimum: .debug, fileDescriptor: fds[1])
        logger.warning("unknown message_type ignored", ["message_type": value])
        close(fds[1])
        let text = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true).readDataToEndOfFile()
        return String(decoding: text, as: UTF8.self)
    }

    /// Server-controlled values (message_type, control_type, nack error, message_id) are
    /// logged bare unless they hold a space, quote, `=` or newline (Sources/Daemon/Logging/Logger.swift:53):
    /// a carriage return or an ANSI escape passes through raw, so a hostile server can forge or hide log
    /// lines on a terminal or in a line-oriented collector that splits on CR.
    @Test func controlCharactersFromTheServerAreEscaped() throws {
        let line = try logged("future\r\u{1B}[2K\u{1B}[1Aforged")
        #expect(line.hasSuffix("\n"))
        let body = line.dropLast()
        #expect(!body.contains { $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false },
                "raw control characters in the log line: \(line.debugDescription)")
    }
}

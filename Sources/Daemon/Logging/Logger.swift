import CCS
import Foundation
import Synchronization

/// Logs to stderr as one `key=value` line each: a fixed message plus structured metadata
/// (`connection`, `message_id`, `error`, ...). Never mixed with events, which go to their own outlet.
///
/// Callers pass registration tokens through `shortenedToken` and never pass the server key.
public final class Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    /// How lines are written: `plain` (`key=value`), `journal` (the same with an `<N>` syslog priority prefix,
    /// for journald under systemd), `json` (one object per line).
    public enum Format: String, Sendable, CaseIterable {
        case plain, journal, json
    }

    private let minimum: Level
    private let fd: Int32
    /// Being built: only `plain` is written so far.
    public let format: Format
    private let lock = Mutex(())

    public init(minimum: Level = .info, format: Format = .plain, fileDescriptor: Int32 = 2) {
        self.minimum = minimum
        self.format = format
        self.fd = fileDescriptor
    }

    /// Whether `level` would be written; guard costly debug metadata with it.
    public func isEnabled(_ level: Level) -> Bool { level >= minimum }

    public func debug(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.info, message, metadata) }
    public func warning(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.error, message, metadata) }

    public func log(_ level: Level, _ message: String, _ metadata: KeyValuePairs<String, String>) {
        emit(level, message, metadata)
    }

    /// The same with metadata built at run time (e.g. a `DispatcherLog`'s), in order.
    public func log(_ level: Level, _ message: String, fields: [(key: String, value: String)]) {
        emit(level, message, fields)
    }

    private func emit<Metadata: Sequence>(_ level: Level, _ message: String, _ metadata: Metadata)
    where Metadata.Element == (key: String, value: String) {
        guard level >= minimum else { return }
        var line = "\(Logger.timestamp()) level=\(level) msg="
        Logger.appendValue(message, to: &line)
        for (key, value) in metadata {
            line += " \(key)="
            Logger.appendValue(value, to: &line)
        }
        line += "\n"
        lock.withLock { _ in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written <= 0 { break }
                offset += written
            }
            bytes.removeAll()
        }
    }

    /// Writes a value bare when it is plain, else as a JSON string with control characters escaped, so a
    /// value from the network can neither split nor forge log lines.
    static func appendValue(_ value: String, to line: inout String) {
        let plain = !value.isEmpty && !value.unicodeScalars.contains { scalar in
            scalar.value <= 0x20 || scalar == "\"" || scalar == "=" || scalar == "\\"
                || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
        }
        if plain {
            line += value
            return
        }
        line += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var time = now.tv_sec
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_nsec / 1_000_000))
    }
}

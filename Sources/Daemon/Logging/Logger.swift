import CCS
import FoundationEssentials
import Glibc
import Synchronization

/// Logs to stderr, one line per entry: a fixed message plus structured metadata (`connection`, `message_id`,
/// `error`, ...). Never mixed with events, which go to their own outlet.
///
/// Formats (`Format`): `plain` is `TIME level=L msg=M key=value...`; `journal` is the same line after an
/// sd-daemon(3) priority prefix `<N>` (debug 7, info 6, warning 4, error 3), so journald files each line at
/// its level and `journalctl -p warning` filters; `json` is one object per line,
/// `{"time":…,"level":…,"msg":…,"fields":{…}}`. `Format.automatic(environment:)` picks `journal` when stderr
/// is the journal (`JOURNAL_STREAM`), else `plain`.
///
/// The minimum level can change while ccsd runs (`setMinimum`, a reload); any thread may log. The last
/// warning and error lines written are kept in `recentErrors` (bounded) for the service's status.
/// Callers pass registration tokens through `shortenedToken` and never pass the server key.
public final class Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["debug", "info", "warning", "error"][rawValue] }

        /// The level named `debug`, `info`, `warning` or `error`; nil for anything else.
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.description == name }) else { return nil }
            self = level
        }

        /// The syslog priority sd-daemon(3) prefixes use: debug 7, info 6, warning 4, error 3.
        public var syslogPriority: Int { [7, 6, 4, 3][rawValue] }
    }

    /// How lines are written: `plain` (`key=value`), `journal` (the same with an `<N>` syslog priority prefix,
    /// for journald under systemd), `json` (one object per line).
    public enum Format: String, Sendable, CaseIterable {
        case plain, journal, json

        /// `journal` when `fileDescriptor` (stderr) is connected to the journal, else `plain`. systemd sets
        /// `JOURNAL_STREAM=DEV:INODE` (decimal) for a service whose stderr goes to journald
        /// (systemd.exec(5), "Environment variables in spawned processes"); it is trusted only when that
        /// device and inode are the descriptor's own, since a child whose stderr was redirected still
        /// inherits the variable.
        public static func automatic(environment: [String: String], fileDescriptor: Int32 = 2) -> Format {
            guard let value = environment["JOURNAL_STREAM"] else { return .plain }
            let parts = value.split(separator: ":")
            guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .plain }
            var status = stat()
            guard fstat(fileDescriptor, &status) == 0 else { return .plain }
            return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode ? .journal : .plain
        }
    }

    private let minimumLevel: Atomic<Int>
    private let fd: Int32
    public let format: Format
    private let lock = Locked(())
    /// The last warning and error lines written (at most 20), oldest first.
    public let recentErrors = RecentLogEntries(capacity: 20)
    /// Secrets never written (`setSecrets`): replaced in the message and every value before formatting.
    let secrets = Locked<[String]>([])

    public init(minimum: Level = .info, format: Format = .plain, fileDescriptor: Int32 = 2) {
        self.minimumLevel = Atomic(minimum.rawValue)
        self.format = format
        self.fd = fileDescriptor
    }

    /// The lowest level written now.
    public var minimum: Level { Level(rawValue: minimumLevel.load(ordering: .relaxed))! }

    /// Changes the lowest level written (a reload); takes effect for every line logged after it, on any thread.
    public func setMinimum(_ level: Level) {
        minimumLevel.store(level.rawValue, ordering: .relaxed)
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
        let time = Logger.timestamp()
        let secrets = self.secrets.withLock { $0 }
        let message = secrets.isEmpty ? message : Logger.redact(message, secrets)
        let fields: [(key: String, value: String)] = secrets.isEmpty
            ? metadata.map { (key: $0.key, value: $0.value) }
            : metadata.map { (key: $0.key, value: Logger.redact($0.value, secrets)) }
        let line = Logger.line(format: format, time: time, level: level, message: message, metadata: fields)
        if level >= .warning {
            recentErrors.append(.init(time: time, level: level, message: message,
                                      fields: fields.map { .init(key: $0.key, value: $0.value) }))
        }
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

    /// One log line in `format`, newline included.
    static func line<Metadata: Sequence>(format: Format, time: String, level: Level, message: String, metadata: Metadata) -> String
    where Metadata.Element == (key: String, value: String) {
        var line = ""
        switch format {
        case .plain, .journal:
            if format == .journal { line += "<\(level.syslogPriority)>" }
            line += "\(time) level=\(level) msg="
            appendValue(message, to: &line)
            for (key, value) in metadata {
                line += " \(key)="
                appendValue(value, to: &line)
            }
        case .json:
            line += "{\"time\":"
            appendJSONString(time, to: &line)
            line += ",\"level\":"
            appendJSONString(level.description, to: &line)
            line += ",\"msg\":"
            appendJSONString(message, to: &line)
            line += ",\"fields\":{"
            var first = true
            for (key, value) in metadata {
                if !first { line += "," }
                first = false
                appendJSONString(key, to: &line)
                line += ":"
                appendJSONString(value, to: &line)
            }
            line += "}}"
        }
        line += "\n"
        return line
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
        appendJSONString(value, to: &line)
    }

    /// Writes `value` as a JSON string (RFC 8259 §7): quotes and backslashes escaped, control characters,
    /// DEL, C1 controls and the line separators U+2028/U+2029 as `\uXXXX`, so no value can split a line.
    static func appendJSONString(_ value: String, to line: inout String) {
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
        return CCSDaemon.rfc3339(unixMillis: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000))
    }
}

/// A log line the dispatcher asks the driver to write: what happened that the driver cannot see in the
/// actions (an unmatched ack, an error about an ACK, an unknown message or control type, a refusal).
/// Values from the network appear as received; the driver's logger escapes them. Tokens are shortened.
public struct DispatcherLog: Sendable, Equatable {
    public enum Level: Sendable, Equatable {
        case debug, info, warning, error
    }

    public let level: Level
    /// A fixed text (no values in it).
    public let message: String
    /// Key/value pairs in the order they should be written.
    public let metadata: [(key: String, value: String)]

    public init(_ level: Level, _ message: String, _ metadata: [(key: String, value: String)] = []) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    /// The value of `key`, if present.
    public subscript(key: String) -> String? { metadata.first { $0.key == key }?.value }

    public static func == (a: DispatcherLog, b: DispatcherLog) -> Bool {
        a.level == b.level && a.message == b.message
            && a.metadata.count == b.metadata.count
            && zip(a.metadata, b.metadata).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Why the HTTP server could not start a listener: `listener` names it (a path or `HOST:PORT`), `reason`
/// says what failed (the system call and its `strerror`).
public struct HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    public let listener: String
    public let reason: String

    public init(listener: String, reason: String) {
        self.listener = listener
        self.reason = reason
    }

    public var description: String { "API listener \(listener): \(reason)" }
}

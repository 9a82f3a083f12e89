/// Why an emulator command or `start()` failed.
public struct EmulatorError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No live connection has the given id.
        case noSuchConnection
        /// The command needs a bound (logged-in) connection and there is none, or the one named is not bound.
        case noReadyConnection
        /// A control line that is not a known command, or has bad arguments.
        case invalidCommand
        /// Listening, certificate generation or writing `ca.pem` failed.
        case startFailed
        /// `start()` called twice, or a command after `stop()`.
        case wrongState
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

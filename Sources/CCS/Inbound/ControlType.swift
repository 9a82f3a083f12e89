/// The `control_type` of a CCS control message (ccs-protocol.md §5).
public enum ControlType: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// `CONNECTION_DRAINING`: the server is about to close this connection; open another and send there.
    case connectionDraining
    /// Any other control_type, as received: logged and ignored, never fatal.
    case other(String)

    public init(rawValue: String) {
        self = rawValue == CCSErrorCode.connectionDraining.rawValue ? .connectionDraining : .other(rawValue)
    }

    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// The control_type as CCS spells it.
    public var rawValue: String {
        switch self {
        case .connectionDraining: CCSErrorCode.connectionDraining.rawValue
        case .other(let value): value
        }
    }

    public var description: String { rawValue }
}

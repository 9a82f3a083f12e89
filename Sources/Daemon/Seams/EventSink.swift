/// Where events go, one JSON line each: the seam between the daemon's driver and `EventOutlet` (a file
/// descriptor), so tests can record the lines and make the outlet fail. Confined to the daemon's loop.
public protocol EventSink: AnyObject {
    /// Buffers one line (with its trailing newline).
    func append(_ line: String)
    /// Writes everything buffered.
    /// - Returns: false when it could not all be written; `failure` says why. The daemon then stops
    ///   (exit 4), since it can hand nothing more over.
    @discardableResult func flush() -> Bool
    /// Why the last write failed; nil while every write succeeded.
    var failure: String? { get }
}

extension EventOutlet: EventSink {}

/// Where events go, one JSON line each: the seam between the daemon's driver and `EventOutlet` (a file
/// descriptor), so tests can record the lines and make the outlet fail. Confined to the daemon's loop.
public protocol EventSink: AnyObject {
    /// Buffers one line (with its trailing newline).
    func append(_ line: String)
    /// Buffers one line given as UTF-8 bytes (with its trailing newline); see the extension's default.
    func append(utf8 line: [UInt8])
    /// Buffers several lines at once: `bytes` holds them back to back, each with its trailing newline, and
    /// `lineEnds` the offset just past each line's newline, in order (the last is `bytes.count`).
    /// See the extension's default.
    func append(utf8Lines bytes: [UInt8], lineEnds: [Int])
    /// Writes everything buffered.
    /// - Returns: false when it could not all be written; `failure` says why. The daemon then stops
    ///   (exit 4), since it can hand nothing more over.
    @discardableResult func flush() -> Bool
    /// Why the last write failed; nil while every write succeeded.
    var failure: String? { get }
}

extension EventSink {
    /// Default: the bytes as text, through `append(_:)`.
    public func append(utf8 line: [UInt8]) { append(String(decoding: line, as: UTF8.self)) }

    /// Default: each line through `append(utf8:)`, in order.
    public func append(utf8Lines bytes: [UInt8], lineEnds: [Int]) {
        var start = 0
        for end in lineEnds {
            append(utf8: Array(bytes[start..<end]))
            start = end
        }
    }
}

extension EventOutlet: EventSink {}

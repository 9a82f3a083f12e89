/// One CCS connection's downstream bookkeeping (ccs-protocol.md §5): its phase, its flow window, and
/// the message_ids in flight on it.
///
/// Draining is a phase, not a flag: a draining session takes no new messages, still resolves the acks
/// and nacks that arrive for what it has in flight, and hands back the rest when it closes.
public struct CCSSession: Sendable {
    public enum Phase: Sendable, Equatable {
        /// TLS and XMPP negotiation under way: nothing may be sent.
        case connecting
        /// Logged in: takes messages while the window has room.
        case ready
        /// CONNECTION_DRAINING seen: no new messages; acks still resolve.
        case draining
    }

    public let id: Int
    public let endpoint: Endpoint
    public private(set) var phase: Phase = .connecting
    public private(set) var window: FlowWindow
    /// A message in flight here: its live-table handle, its message_id, and when it was sent (dispatcher
    /// clock, seconds).
    struct InFlight: Sendable {
        let handle: LiveTable.Handle
        let messageID: String
        let sentAt: Double
    }

    /// What is in flight here, in no order. The live table keeps each message's position here
    /// (`LiveTable.Wire`), so a send and a resolution touch no map. One array, not one per field: the
    /// dispatcher copies sessions (`sessions[id]`), and each array costs a retain and a release per copy.
    /// A message that was abandoned while in flight stays here, holding its window slot, until its ack or
    /// nack arrives or the connection ends: CCS still counts it as unacked. Its handle is then stale (an
    /// orphan), and only its message_id finds it (`position(of:)`).
    private(set) var items: [InFlight] = []

    /// message_ids sent here and not yet acked or nacked, in no order.
    public var inFlight: [String] { items.map(\.messageID) }

    /// The handles of what is in flight here, in no order.
    var inFlightHandles: [LiveTable.Handle] { items.map(\.handle) }

    /// When each message_id in flight here was sent (dispatcher clock, seconds): a view built on each read.
    public var sentAt: [String: Double] { Dictionary(uniqueKeysWithValues: items.map { ($0.messageID, $0.sentAt) }) }

    public init(id: Int, endpoint: Endpoint, windowCapacity: Int) {
        self.id = id
        self.endpoint = endpoint
        self.window = FlowWindow(capacity: windowCapacity)
    }

    public var canSend: Bool { phase == .ready && window.canSend }

    /// The free window while it can take a message, else nil: what `ConnectionChoice` is told after a change.
    var freeIfCanSend: Int? { canSend ? window.free : nil }

    /// When this connection last resolved a message (ack, nack, stanza error), or logged in: seconds.
    public private(set) var lastResolutionAt = 0.0

    /// When this connection logged in (dispatcher clock, seconds); nil while connecting.
    public private(set) var readyAt: Double?

    public mutating func becameReady(now: Double) {
        guard phase == .connecting else { preconditionFailure("becameReady in phase \(phase)") }
        phase = .ready
        lastResolutionAt = now
        readyAt = now
    }

    /// Records a send at `now`; returns the message's position among those in flight, and `freeIfCanSend`
    /// after it (the caller mutates the session in place and reads nothing else back). The caller checked
    /// `canSend`.
    mutating func didSend(_ messageID: String, handle: LiveTable.Handle, now: Double) -> (position: Int32, freeIfCanSend: Int?) {
        guard phase == .ready else { preconditionFailure("send in phase \(phase)") }
        assert(!items.contains { $0.messageID == messageID }, "\(messageID) sent twice on connection \(id)")
        window.didSend()
        items.append(InFlight(handle: handle, messageID: messageID, sentAt: now))
        return (Int32(items.count - 1), freeIfCanSend)
    }

    /// The message in flight at `position`.
    func inFlight(at position: Int32) -> InFlight { items[Int(position)] }

    /// The position of `messageID` among those in flight here, or nil: a scan of at most the window.
    func position(of messageID: String) -> Int32? {
        items.firstIndex { $0.messageID == messageID }.map(Int32.init)
    }

    /// The position of `handle` among those in flight here, or nil: a scan of at most the window.
    func position(of handle: LiveTable.Handle) -> Int32? {
        items.firstIndex { $0.handle == handle }.map(Int32.init)
    }

    /// An ack or nack arrived for the message in flight at `position`: it leaves, and the last one takes its
    /// position. Returns the handle of the one that left, the handle of the one moved into its position (nil
    /// when it was the last), and `freeIfCanSend` after it, so that the caller, which mutates the session in
    /// place, reads nothing back.
    mutating func resolve(at position: Int32, now: Double)
        -> (resolved: LiveTable.Handle, moved: LiveTable.Handle?, freeIfCanSend: Int?) {
        let index = Int(position)
        let last = items.count - 1
        let resolved = items[index].handle
        items.swapAt(index, last)
        items.removeLast()
        lastResolutionAt = now
        window.didResolve()
        return (resolved, index < last ? items[index].handle : nil, freeIfCanSend)
    }

    /// Enters draining; returns false when it already was. A connecting session may drain too: the server
    /// can send CONNECTION_DRAINING as soon as the resource is bound, before login finished; it then
    /// never takes a message.
    public mutating func startDraining() -> Bool {
        guard phase == .ready || phase == .connecting else { return false }
        phase = .draining
        return true
    }
}

/// A CCS server address.
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`; returns nil when the text has no valid port 1…65535.
    public init?(parsing text: String) {
        var hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { return nil }
        }
        guard !hostPart.isEmpty, let port = Int(portPart), (1...65535).contains(port) else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

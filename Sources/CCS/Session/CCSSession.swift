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
    /// What is in flight here, in three parallel arrays in no order: each message's live-table handle, its
    /// message_id, and when it was sent (dispatcher clock, seconds). The live table keeps each message's
    /// position here (`LiveTable.Wire`), so a send and a resolution touch no map. A message that was
    /// abandoned while in flight stays here, holding its window slot, until its ack or nack arrives or the
    /// connection ends: CCS still counts it as unacked. Its handle is then stale (an orphan), and only its
    /// message_id finds it (`position(of:)`).
    private(set) var inFlightHandles: [LiveTable.Handle] = []
    /// message_ids sent here and not yet acked or nacked, in no order.
    public private(set) var inFlight: [String] = []
    private var sendTimes: [Double] = []

    /// When each message_id in flight here was sent (dispatcher clock, seconds): a view built on each read.
    public var sentAt: [String: Double] { Dictionary(uniqueKeysWithValues: zip(inFlight, sendTimes)) }

    public init(id: Int, endpoint: Endpoint, windowCapacity: Int) {
        self.id = id
        self.endpoint = endpoint
        self.window = FlowWindow(capacity: windowCapacity)
    }

    public var canSend: Bool { phase == .ready && window.canSend }

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

    /// Records a send at `now`; returns the message's position among those in flight. The caller checked
    /// `canSend`.
    mutating func didSend(_ messageID: String, handle: LiveTable.Handle, now: Double) -> Int32 {
        guard phase == .ready else { preconditionFailure("send in phase \(phase)") }
        assert(!inFlight.contains(messageID), "\(messageID) sent twice on connection \(id)")
        window.didSend()
        inFlightHandles.append(handle)
        inFlight.append(messageID)
        sendTimes.append(now)
        return Int32(inFlight.count - 1)
    }

    /// The handle, message_id and send time of the message in flight at `position`.
    func inFlight(at position: Int32) -> (handle: LiveTable.Handle, messageID: String, sentAt: Double) {
        (inFlightHandles[Int(position)], inFlight[Int(position)], sendTimes[Int(position)])
    }

    /// The position of `messageID` among those in flight here, or nil: a scan of at most the window.
    func position(of messageID: String) -> Int32? {
        inFlight.firstIndex(of: messageID).map(Int32.init)
    }

    /// The position of `handle` among those in flight here, or nil: a scan of at most the window.
    func position(of handle: LiveTable.Handle) -> Int32? {
        inFlightHandles.firstIndex(of: handle).map(Int32.init)
    }

    /// An ack or nack arrived for the message in flight at `position`: it leaves, and the last one takes its
    /// position, whose handle is returned (nil when it was the last).
    mutating func resolve(at position: Int32, now: Double) -> LiveTable.Handle? {
        let index = Int(position)
        let last = inFlight.count - 1
        inFlightHandles.swapAt(index, last)
        inFlight.swapAt(index, last)
        sendTimes.swapAt(index, last)
        inFlightHandles.removeLast()
        inFlight.removeLast()
        sendTimes.removeLast()
        lastResolutionAt = now
        window.didResolve()
        return index < last ? inFlightHandles[index] : nil
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

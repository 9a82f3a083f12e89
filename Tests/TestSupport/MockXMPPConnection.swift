import CCS
import Daemon
import XMLStream
import XMPP

/// An `XMPPConnection` with no socket: it records what the driver asks (`sent`, `closeCalls`, `aborted`)
/// and lets a test deliver what a server would (ready, stanzas, the end). Every callback goes through the
/// `ManualLoop`, on a later turn, never inside a call the delegate made (the `XMPPConnection` rule).
public final class MockXMPPConnection: XMPPConnection, @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, on the test's own task.
    public let connectionID: Int
    public let endpoint: Endpoint
    public let loop: ManualLoop
    public weak var delegate: (any XMPPConnectionDelegate)?
    /// Whether `close()` ends the connection by itself (the server answers `</stream:stream>` at once);
    /// false models a server that never closes, so only `abort()` (or `deliverEnd`) ends it.
    public var closesWhenAsked: Bool

    public private(set) var started = false
    /// The stanzas sent, in order (raw XML text).
    public private(set) var sent: [String] = []
    public private(set) var closeCalls = 0
    public private(set) var aborted = false
    /// Whether the end was reported to the delegate.
    public private(set) var ended = false
    private var endQueued = false
    /// Whether `send` takes stanzas now (false before `deliverReady`, after `close`, `abort` and the end).
    public private(set) var isOpen = false
    /// Whether the driver paused reading (`setReadingPaused`), and each change in order.
    public private(set) var readingPaused = false
    public private(set) var readingPauseChanges: [Bool] = []

    public init(connectionID: Int, endpoint: Endpoint, loop: ManualLoop, delegate: (any XMPPConnectionDelegate)?,
                closesWhenAsked: Bool = true) {
        self.connectionID = connectionID
        self.endpoint = endpoint
        self.loop = loop
        self.delegate = delegate
        self.closesWhenAsked = closesWhenAsked
    }

    // MARK: XMPPConnection

    public func start() {
        precondition(!started, "MockXMPPConnection \(connectionID): start() twice")
        started = true
    }

    @discardableResult
    public func send(raw text: String) -> Bool {
        guard isOpen else { return false }
        sent.append(text)
        return true
    }

    public func close() {
        closeCalls += 1
        isOpen = false
        if closesWhenAsked { queueEnd(XMPPError(.closedLocally, message: "")) }
    }

    public func setReadingPaused(_ paused: Bool) {
        readingPaused = paused
        readingPauseChanges.append(paused)
    }

    public func abort() {
        aborted = true
        isOpen = false
        queueEnd(XMPPError(.closedLocally, message: "aborted"))
    }

    // MARK: What the server does (on a later loop turn)

    /// Login finishes with the bound JID `jid`.
    public func deliverReady(jid: String = "sender@gcm.googleapis.com/ccsd") {
        loop.enqueue { [self] in
            guard !ended else { return }
            isOpen = true
            delegate?.connectionDidBecomeReady(self, jid: jid)
        }
    }

    /// A stanza arrives.
    public func deliver(_ stanza: XMLElement) {
        loop.enqueue { [self] in
            guard !ended else { return }
            delegate?.connection(self, didReceive: stanza)
        }
    }

    /// The connection ends (the server closed it, a transport error, a failed login).
    public func deliverEnd(_ error: XMPPError) {
        isOpen = false
        queueEnd(error)
    }

    private func queueEnd(_ error: XMPPError) {
        guard !endQueued else { return }
        endQueued = true
        loop.enqueue { [self] in
            ended = true
            delegate?.connection(self, didEndWith: error)
        }
    }
}

/// Makes `MockXMPPConnection`s and keeps them all, in creation order.
public final class MockConnectionFactory: XMPPConnectionFactory, @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, on the test's own task.
    public let loop: ManualLoop
    /// Passed to each new connection.
    public var closesWhenAsked = true
    public private(set) var made: [MockXMPPConnection] = []

    public init(loop: ManualLoop) {
        self.loop = loop
    }

    public func makeConnection(id: Int, endpoint: Endpoint, delegate: any XMPPConnectionDelegate) -> any XMPPConnection {
        let connection = MockXMPPConnection(connectionID: id, endpoint: endpoint, loop: loop, delegate: delegate,
                                            closesWhenAsked: closesWhenAsked)
        made.append(connection)
        return connection
    }

    /// The latest connection made with `id`.
    public func connection(_ id: Int) -> MockXMPPConnection? {
        made.last { $0.connectionID == id }
    }
}

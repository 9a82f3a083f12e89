import CCS

/// What the service shows of a running daemon: `GET /v1/status`, `/readyz`, `/metrics` and systemd's `STATUS=`.
public struct DaemonSnapshot: Sendable {
    /// One open connection.
    public struct Connection: Sendable, Equatable {
        public enum State: String, Sendable {
            /// TLS, stream and SASL negotiation not yet done.
            case connecting
            /// Logged in; takes downstream messages as its window allows.
            case ready
            /// CONNECTION_DRAINING received (ccs-protocol.md §5): finishes its in-flight messages, takes no new ones.
            case draining
        }
        public let id: Int
        public let endpoint: Endpoint
        public let state: State
        /// Downstream messages sent and not yet acked or nacked on this connection (at most `window`).
        public let inFlight: Int
        /// The window: the most messages in flight at once (100, ccs-protocol.md §4).
        public let window: Int
    }

    /// The lifecycle state (`idle`, `starting`, `running`, `stopping`, `closing`, `stopped`).
    public let lifecycle: String
    /// Open connections, by id.
    public let connections: [Connection]
    /// Messages accepted and not final (persisting, queued, in flight, waiting to retry, finalizing).
    public let outstanding: Int
    /// Messages in flight on every connection.
    public let inFlight: Int
    /// Messages waiting for a window (accepted, not in flight, not final).
    public let queued: Int
    /// Whether the store takes writes now.
    public let storeWritable: Bool
    /// Counters since the start of this run.
    public let counters: DispatcherCounters

    /// Connections that are ready.
    public var readyConnections: Int { connections.filter { $0.state == .ready }.count }
}

extension CCSDaemon {
    /// A snapshot of the daemon now. Call on the loop.
    public func snapshot() -> DaemonSnapshot {
        let connections = dispatcher.sessions.values.sorted { $0.id < $1.id }.map { session in
            let state: DaemonSnapshot.Connection.State = switch session.phase {
            case .ready: .ready
            case .draining: .draining
            default: .connecting
            }
            return DaemonSnapshot.Connection(id: session.id, endpoint: session.endpoint, state: state,
                                             inFlight: session.window.inFlight, window: session.window.capacity)
        }
        let inFlight = dispatcher.inFlight
        let lifecycleName = "\(lifecycle.state)".split(separator: "(").first.map(String.init) ?? "\(lifecycle.state)"
        return DaemonSnapshot(lifecycle: lifecycleName, connections: connections, outstanding: dispatcher.outstanding,
                              inFlight: inFlight, queued: max(0, dispatcher.pending - inFlight),
                              storeWritable: !storeDown, counters: dispatcher.counters)
    }
}

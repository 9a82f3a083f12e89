import CCS
import Store

/// What `GET /metrics` shows of a running daemon: the snapshot (gauges and counters) and the histograms.
public struct DaemonMetrics: Sendable {
    /// Connections, queue, store state and the dispatcher's counters.
    public let snapshot: DaemonSnapshot
    /// Seconds from a message's acceptance to its ack (`Dispatcher.ackLatency`).
    public let ackLatency: Histogram
    /// Seconds per store commit (`StoreWriter.commitLatency`).
    public let storeCommitLatency: Histogram
    /// CCS messages that could not be read (no message_id or sender to ACK them by), redeliveries included.
    public let unreadableMessages: Int

    public init(snapshot: DaemonSnapshot, ackLatency: Histogram, storeCommitLatency: Histogram, unreadableMessages: Int) {
        self.snapshot = snapshot
        self.ackLatency = ackLatency
        self.storeCommitLatency = storeCommitLatency
        self.unreadableMessages = unreadableMessages
    }
}

extension CCSDaemon {
    /// The daemon's metrics now. Call on the loop; it copies values (no store access).
    public func metrics() -> DaemonMetrics {
        DaemonMetrics(snapshot: snapshot(), ackLatency: dispatcher.ackLatency, storeCommitLatency: writer.commitLatency,
                      unreadableMessages: unreadable.total)
    }

    /// Calls `observer` on the loop with the last `seq` of every commit that journaled events, after the
    /// events file has them. For consumers of the journal that should not poll (the API's long poll, the
    /// webhook outlet). Call on the loop.
    public func observeJournal(_ observer: @escaping (Int64) -> Void) {
        journalObservers.append(observer)
    }
}

extension DaemonSnapshot {
    /// A snapshot from given values (for renderers and their tests; the daemon makes its own with `snapshot()`).
    public static func make(lifecycle: String, connections: [Connection], outstanding: Int, inFlight: Int, queued: Int,
                            storeWritable: Bool, counters: DispatcherCounters) -> DaemonSnapshot {
        DaemonSnapshot(lifecycle: lifecycle, connections: connections, outstanding: outstanding, inFlight: inFlight,
                       queued: queued, storeWritable: storeWritable, counters: counters)
    }
}

extension DaemonSnapshot.Connection {
    /// A connection's line from given values (for renderers and their tests).
    public static func make(id: Int, endpoint: Endpoint, state: State, inFlight: Int, window: Int) -> Self {
        Self(id: id, endpoint: endpoint, state: state, inFlight: inFlight, window: window)
    }
}

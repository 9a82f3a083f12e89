import CCS
import Store

/// Reads and acknowledges the events journal from any thread, for consumers outside the loop (the webhook
/// outlet). Each call hops to the loop and uses the `StoreWriter` there: reads run on the writer's queue,
/// serial with its commits; acknowledgements ride on the next commit (`StoreWriter.acknowledgeEvents`).
public struct EventJournalAccess: Sendable {
    /// The cursor `consumer` acknowledged last (nil if none); `completion` runs on the loop.
    public let cursor: @Sendable (_ consumer: String, _ completion: @escaping @Sendable (Result<Int64?, StoreError>) -> Void) -> Void
    /// Up to `limit` events with `seq` above `after`, in order; `completion` runs on the loop.
    public let events: @Sendable (_ after: Int64, _ limit: Int,
                                  _ completion: @escaping @Sendable (Result<[JournaledEvent], StoreError>) -> Void) -> Void
    /// Records that `consumer` has every event up to `seq` (persisted with the next commit, or at close).
    public let acknowledge: @Sendable (_ consumer: String, _ seq: Int64) -> Void

    /// Access through `writer`, whose loop `post` reaches (the loop `writer` was made with).
    public static func writer(_ writer: StoreWriter, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) -> EventJournalAccess {
        let box = WriterBox(writer)
        return EventJournalAccess(
            cursor: { consumer, completion in
                post { box.writer.read({ store throws(StoreError) in try store.cursor(of: consumer) }, completion: completion) }
            },
            events: { after, limit, completion in
                post { box.writer.read({ store throws(StoreError) in try store.events(after: after, limit: limit) }, completion: completion) }
            },
            acknowledge: { consumer, seq in
                post { box.writer.acknowledgeEvents(consumer: consumer, through: seq) }
            })
    }
}

/// The writer, touched only on the loop (inside `post`).
private final class WriterBox: @unchecked Sendable {
    let writer: StoreWriter
    init(_ writer: StoreWriter) { self.writer = writer }
}

extension CCSDaemon {
    /// The events journal of this daemon's store, for consumers on other threads.
    /// Acknowledgements move the consumer's cursor for `max_event_backlog` too (once the consumer is
    /// registered with `registerEventConsumer`). The access
    /// holds the daemon weakly: its consumer (the webhook outlet) is held by the daemon's journal observers.
    public var journalAccess: EventJournalAccess {
        let access = EventJournalAccess.writer(writer) { [weak self] work in self?.execute(work) }
        return EventJournalAccess(cursor: access.cursor, events: access.events) { [weak self] consumer, seq in
            guard let daemon = self else { return }
            daemon.execute {
                daemon.writer.acknowledgeEvents(consumer: consumer, through: seq)
                // Counted once registered (`registerEventConsumer`), not re-registered by a late acknowledgement.
                daemon.eventConsumerAcknowledged(consumer, through: seq, registering: false)
            }
        }
    }

    /// A journaled event as the JSON object the events file and `GET /v1/events` show (with `seq` and
    /// `time`), without a trailing newline.
    public static func eventObject(_ event: JournaledEvent) -> String {
        var line = eventLine(event)
        if line.last == "\n" { line.removeLast() }
        return line
    }
}

/// What the driver must do for the dispatcher, in order.
public enum DispatcherAction: Sendable, Equatable {
    /// Open connection `id` to `endpoint` (TLS, then XMPP login).
    case open(connection: Int, endpoint: Endpoint)
    /// Send this downstream message on the connection.
    case send(connection: Int, record: MessageRecord)
    /// Send an ACK for an upstream message or receipt on the connection it arrived on (§3). Never windowed;
    /// only ever emitted by `Dispatcher.recorded(through:)`, once the hand-over was recorded.
    /// `messageID` carries the literal the server wrote when it held unpaired surrogates: write it with
    /// `CCSStanza.ack(to:messageID:)`.
    case ack(connection: Int, to: String, messageID: UpstreamMessageID)
    /// Close the stream cleanly.
    case close(connection: Int)
    /// Drop the connection at once: the dispatcher already counts it as ended (no ack within `ackTimeout`).
    case abort(connection: Int, reason: String)
    /// Store a submitted message and journal its `accepted` event, in one transaction; answer with
    /// `Dispatcher.persisted(_:now:)`. Nothing is reported accepted, or sent, before that answer.
    case persist(MessageRecord, line: Int?)
    /// Journal an event (and, in the same transaction, mark its message final or remember its upstream
    /// message_id); answer with `Dispatcher.recorded(through:now:)` once committed, then write it out.
    /// Inline, not `indirect`: with the rare events boxed in `DispatcherEvent`, the request keeps every action
    /// within 128 bytes (`ValueLayoutTests`), which the compiler moves inline rather than by `memcpy`.
    case record(RecordRequest)
    /// A live message's `attempts`, `sends` or `lastError` changed. Not gating: the store may coalesce these,
    /// and losing one costs only a count after a restart.
    case saveProgress(MessageRecord)
    /// Something the driver should log (the dispatcher has no logger).
    case log(DispatcherLog)
    /// A configuration error no reconnect can fix (authentication): stop the daemon with this reason.
    case stop(reason: String)
}

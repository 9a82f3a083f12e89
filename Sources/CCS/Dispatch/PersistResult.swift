/// What the store did with one submitted message (`DispatcherAction.persist`).
public enum PersistOutcome: Sendable, Equatable {
    /// Inserted, and its `accepted` event journaled in the same transaction.
    case stored
    /// Already stored and not final (a message_id the dispatcher does not know, e.g. from another writer).
    case duplicateLive
    /// Already final within the retention window; `outcome` is its stored final event (a JSON object's text).
    case duplicateFinal(outcome: String)
    /// The store could not take it (`reason` names the path and the error): rejected, retryable.
    case failed(reason: String)
}

/// The answer for one `DispatcherAction.persist`, given to `Dispatcher.persisted(_:now:)`.
public struct PersistResult: Sendable, Equatable {
    public let messageID: String
    /// The intake line the message came from, echoed from the request.
    public let line: Int?
    public let outcome: PersistOutcome

    public init(messageID: String, line: Int?, outcome: PersistOutcome) {
        self.messageID = messageID
        self.line = line
        self.outcome = outcome
    }
}

/// One downstream message as the store has it (`MessageStore.storedMessage(_:)`): for `GET /v1/messages/{id}`
/// once the message is no longer live in the dispatcher.
public struct StoredMessage: Sendable, Equatable {
    public var messageID: String
    /// Wall clock at intake, ms since 1970.
    public var acceptedAtUnixMillis: Int64
    /// Attempts that count toward the retry limit, times sent (resends included) and the last error, as last saved.
    public var attempts: Int
    public var sends: Int
    public var lastError: String?
    /// The final event's JSON object (acked, nacked with `final:true`, expired), nil while not final.
    public var finalEvent: String?
    /// When it became final, ms since 1970 (0 while not final).
    public var finalAtUnixMillis: Int64

    public init(messageID: String, acceptedAtUnixMillis: Int64, attempts: Int, sends: Int, lastError: String?,
                finalEvent: String?, finalAtUnixMillis: Int64) {
        self.messageID = messageID
        self.acceptedAtUnixMillis = acceptedAtUnixMillis
        self.attempts = attempts
        self.sends = sends
        self.lastError = lastError
        self.finalEvent = finalEvent
        self.finalAtUnixMillis = finalAtUnixMillis
    }
}

extension MessageStore {
    /// Stores that keep no per-message state for queries answer nil (test doubles).
    public func storedMessage(_ messageID: String) throws(StoreError) -> StoredMessage? { nil }
}

/// Intake lines that never became messages.
extension Dispatcher {
    /// An intake line that failed validation (or could not be read as a message): its `rejected` event goes
    /// through the journal like every other event (a `.record`), so it keeps its place among the events and
    /// gets a `seq`. `field` and `error` as `ValidationError` gives them.
    public mutating func rejectInvalid(messageID: String?, field: String, error: String, line: Int?) -> [DispatcherAction] {
        var actions: [DispatcherAction] = []
        reject(messageID, field: field, error: error, line: line, actions: &actions)
        return actions
    }
}

/// SIGHUP: reload the configuration without dropping a message (interface first; being built).
extension CCSDaemon {
    /// What a reload did.
    public enum ReloadResult: Sendable, Equatable {
        /// Applied; `changes` names what changed (e.g. `connections 2→4`), empty when nothing did.
        case applied(changes: [String])
        /// Refused; the running configuration is kept. `reason` names the field and the rule.
        case refused(reason: String)
    }

    /// Applies `configuration` to the running daemon. Call on the loop.
    public func reload(_ configuration: Configuration) -> ReloadResult {
        .refused(reason: "reloading the configuration is not supported yet")
    }
}

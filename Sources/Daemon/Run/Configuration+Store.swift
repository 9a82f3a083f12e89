import Store

extension Configuration {
    /// The store's settings from the configuration (`store_synchronous`, `final_retention_seconds`,
    /// `events_retention_seconds`; the upstream dedupe window is `upstream_dedupe_seconds`).
    public var storeConfiguration: StoreConfiguration {
        StoreConfiguration(
            synchronous: storeSynchronous == .full ? .full : .normal,
            finalRetentionMillis: Int64(finalRetentionSeconds * 1000),
            eventsRetentionMillis: Int64(eventsRetentionSeconds * 1000),
            dedupeWindowMillis: Int64(upstreamDedupeSeconds * 1000))
    }

    /// Opens the store `store` selects: SQLite in the state directory (created if missing, locked for this
    /// process), or in memory.
    /// - Throws: `StoreError` naming the path and SQLite's message (the caller exits 5).
    public func openStore() throws(StoreError) -> any MessageStore {
        switch store {
        case .memory:
            // Nothing survives the process, so nothing is kept past its use either: final messages and events
            // are dropped at once (memory follows the outstanding count, as before the store existed).
            var configuration = storeConfiguration
            configuration.finalRetentionMillis = 0
            configuration.eventsRetentionMillis = 0
            return InMemoryMessageStore(configuration: configuration)
        case .sqlite:
            return try SQLiteMessageStore(directory: stateDirectory ?? "/var/lib/ccsd", configuration: storeConfiguration)
        }
    }
}

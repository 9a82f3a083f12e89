import Store

extension Logger {
    /// A `migrationProgress` for `Configuration.openStore` that logs the start of each schema migration (a
    /// migration of a large store takes a while; the log says why the start is slow).
    public func storeMigrationLog() -> (Int) -> Void {
        var logged: Set<Int> = []
        return { version in
            if logged.insert(version).inserted {
                self.info("migrating the store", ["schema_version": "\(version)"])
            }
        }
    }
}

extension Configuration {
    /// The store's settings from the configuration (`store_synchronous`, `final_retention_seconds`,
    /// `events_retention_seconds`; the upstream dedupe window is `upstream_dedupe_seconds`; the page cache
    /// `storePageCacheKiB`).
    public var storeConfiguration: StoreConfiguration {
        StoreConfiguration(
            synchronous: storeSynchronous == .full ? .full : .normal,
            finalRetentionMillis: Int64(finalRetentionSeconds * 1000),
            eventsRetentionMillis: Int64(eventsRetentionSeconds * 1000),
            dedupeWindowMillis: Int64(upstreamDedupeSeconds * 1000),
            pageCacheKiB: storePageCacheKiB)
    }

    /// SQLite's page cache in KiB: a quarter of the intake byte bound (`effectiveMaxQueuedBytes`), between
    /// 512 and 2,000 (SQLite's default). A live message weighs about 1.2 KiB against the bound and its rows
    /// take about 300 bytes, so the live set's rows fit. On one connection (a 2 MiB bound) that is 512 KiB:
    /// floods ran as fast as with 2,000, and a full cache of 2,000 KiB was about 1.5 MiB more resident memory.
    /// On 1,000 connections, whose 100,000 messages in flight spread their acks' updates over many pages,
    /// 512 KiB cost about a fifth of the throughput (docs/performance.md, "Eighth round"). Set when the store
    /// opens, and again by a reload that changes the bound (`CCSDaemon.reload`).
    public var storePageCacheKiB: Int {
        min(2000, max(512, effectiveMaxQueuedBytes / 4 / 1024))
    }

    /// Opens the store `store` selects: SQLite in the state directory (created if missing, locked for this
    /// process), or in memory. `migrationProgress`: as `SQLiteMessageStore.init`'s (the schema version a
    /// migration moves the database to, when it starts and about every second while it runs).
    /// - Throws: `StoreError` naming the path and SQLite's message (the caller exits 5).
    public func openStore(migrationProgress: ((Int) -> Void)? = nil) throws(StoreError) -> any MessageStore {
        switch store {
        case .memory:
            // Nothing survives the process, so nothing is kept past its use either: final messages and events
            // are dropped at once (memory follows the outstanding count, as before the store existed).
            var configuration = storeConfiguration
            configuration.finalRetentionMillis = 0
            configuration.eventsRetentionMillis = 0
            return InMemoryMessageStore(configuration: configuration)
        case .sqlite:
            return try SQLiteMessageStore(directory: stateDirectory ?? "/var/lib/ccsd", configuration: storeConfiguration,
                                          migrationProgress: migrationProgress)
        }
    }
}

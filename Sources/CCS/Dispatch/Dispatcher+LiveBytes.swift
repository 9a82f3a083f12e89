extension Dispatcher {
    /// Bytes of JSON text (`MessageRecord.json`, UTF-8) of every message in the live set, kept by the live
    /// table as messages come and go (O(1)). Read by the daemon's intake byte bound.
    public var liveJSONBytes: Int { table.jsonBytes }
}

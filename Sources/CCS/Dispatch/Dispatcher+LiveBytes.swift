extension Dispatcher {
    /// Bytes of JSON text (`MessageRecord.json`, UTF-8) of every message in the live set. O(live messages):
    /// for occasional checks (the daemon's intake byte bound), not for the per-message path.
    public var liveJSONBytes: Int {
        live.values.reduce(0) { $0 + $1.json.utf8.count }
    }
}

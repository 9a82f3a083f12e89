import CCS

extension CCSEmulator {
    /// Downstream messages acked per connection, live and closed, in connection id order (1, 2, … in
    /// accept order; connections that never got an ack included): how evenly a client spreads its
    /// messages over its connections. `ccs-emulator --acked-per-connection-file` writes it on exit.
    public func ackedPerConnection() -> [(connection: Int, acked: Int)] {
        onLoop {
            var all = ackedOnClosedConnections
            for (id, connection) in connections { all[id] = connection.ackedHere }
            return all.sorted { $0.key < $1.key }.map { (connection: $0.key, acked: $0.value) }
        }
    }

    /// `{"acked_per_connection":[N1,N2,…]}`, in connection id order.
    public func ackedPerConnectionJSON() -> String {
        var out = OrderedJSON()
        out.add("acked_per_connection", .array(ackedPerConnection().map { .int(Int64($0.acked)) }))
        return out.text
    }
}

import CCS

extension CCSEmulator {
    /// Runs one control-channel line and returns one JSON line (no newline).
    ///
    /// Commands (`[connection]` is an emulator connection id; default: the oldest ready/live one):
    /// `drain [connection]`, `upstream N [connection]`, `receipt ID [connection]`, `ping [connection]`,
    /// `stream-error CONDITION [connection]`, `disconnect [connection]`, `stats`, `connections`,
    /// `fault MODE [connection | next N]` (a `ConnectionFault` now, or armed for the next N connections),
    /// `fault clear` (disarm, end slow reads).
    /// Answers `{"ok":true,"connection":ID,…}` (upstream adds `"message_ids":[…]`; stats answers
    /// `{"ok":true,"stats":{…}}`) or `{"ok":false,"error":"…"}`.
    public func handle(commandLine line: String) -> String {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard let command = words.first else { return Self.failure("empty command") }
        let arguments = Array(words.dropFirst())

        func connectionArgument(at index: Int) -> Result<Int?, EmulatorError> {
            guard index < arguments.count else { return .success(nil) }
            guard let id = Int(arguments[index]), index == arguments.count - 1 else {
                return .failure(EmulatorError(.invalidCommand, "\(command): expected a connection id, got \(arguments[index...].joined(separator: " "))"))
            }
            return .success(id)
        }
        func ok(_ connection: Int, _ extra: [(String, JSONValue)] = []) -> String {
            var out = OrderedJSON()
            out.add("ok", .bool(true))
            out.add("connection", .int(Int64(connection)))
            for (key, value) in extra { out.add(key, value) }
            return out.text
        }

        do throws(EmulatorError) {
            switch command {
            case "drain":
                return ok(try drain(connection: try connectionArgument(at: 0).get()))
            case "upstream":
                guard let countText = arguments.first, let count = Int(countText), (1...100_000).contains(count) else {
                    throw EmulatorError(.invalidCommand, "usage: upstream N [connection] (N in 1...100000)")
                }
                let sent = try sendUpstream(count: count, connection: try connectionArgument(at: 1).get())
                return ok(sent.connection, [("message_ids", .array(sent.messageIDs.map { .string($0) }))])
            case "receipt":
                guard let id = arguments.first else { throw EmulatorError(.invalidCommand, "usage: receipt ID [connection]") }
                return ok(try sendReceipt(originalMessageID: id, connection: try connectionArgument(at: 1).get()))
            case "ping":
                return ok(try ping(connection: try connectionArgument(at: 0).get()))
            case "stream-error":
                guard let condition = arguments.first else {
                    throw EmulatorError(.invalidCommand, "usage: stream-error CONDITION [connection]")
                }
                return ok(try sendStreamError(condition: condition, connection: try connectionArgument(at: 1).get()))
            case "fault":
                return try faultCommand(arguments)
            case "disconnect":
                return ok(try disconnect(connection: try connectionArgument(at: 0).get()))
            case "stats":
                guard arguments.isEmpty else { throw EmulatorError(.invalidCommand, "usage: stats") }
                return "{\"ok\":true,\"stats\":\(stats().json)}"
            case "connections":
                var out = OrderedJSON()
                out.add("ok", .bool(true))
                out.add("connections", .array(connectionInfos().map { info in
                    var object: [String: JSONValue] = [
                        "id": .int(Int64(info.id)), "remote": .string(info.remote), "phase": .string(info.phase),
                        "unacked": .int(Int64(info.unacked)), "pending_upstream": .int(Int64(info.pendingUpstream)),
                    ]
                    if let jid = info.jid { object["jid"] = .string(jid) }
                    return .object(object)
                }))
                return out.text
            default:
                throw EmulatorError(.invalidCommand, "unknown command \(command) (drain, upstream, receipt, ping, stream-error, disconnect, fault, stats, connections)")
            }
        } catch {
            return Self.failure(error.message)
        }
    }

    static func failure(_ message: String) -> String {
        var out = OrderedJSON()
        out.add("ok", .bool(false))
        out.add("error", message)
        return out.text
    }
}

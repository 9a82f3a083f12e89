import CCS
import FoundationEssentials

/// `ccsd status`: the running service's connections, queue and recent errors (`GET /v1/status`, docs/api.md),
/// as a table or, with `--json`, as the service wrote them.
enum StatusCommand {
    static let usage = """
        usage: ccsd status [--json] [API OPTIONS]

        Shows the running service: its state, each connection (endpoint, state, messages in flight of its
        window), the queue (waiting for a window, in flight, not yet final) and the recent errors.

          --json                 print the service's answer (GET /v1/status) as it is, one JSON object
        \(APIOptions.usage(width: 23))
          -h, --help             this text

        exit codes: 0 shown, 2 usage, 3 ccsd could not be reached or answered with an error
        """

    struct Options: Equatable {
        var api = APIOptions()
        var json = false
        var help = false

        static let flags = ["--json", "--help"] + APIOptions.flags

        /// Parses the arguments after `status`.
        /// - Throws: `UsageError` naming the flag and the rule.
        static func parse(_ arguments: [String]) throws(UsageError) -> Options {
            var options = Options()
            var cursor = ArgumentCursor(arguments)
            while let flag = cursor.next() {
                if try options.api.take(flag, from: &cursor) { continue }
                switch flag {
                case "--json": options.json = true
                case "-h", "--help": options.help = true
                default: throw ArgumentCursor.unknown(flag, known: flags)
                }
            }
            return options
        }
    }

    /// The status object as lines for a terminal. Members it does not know are listed at the end as
    /// `key: value`, so nothing the service reports is hidden.
    static func render(_ status: JSONValue) -> [String] {
        guard let object = status.objectValue else { return [status.serialized()] }
        var shown: Set<String> = []
        func take(_ key: String) -> JSONValue? {
            shown.insert(key)
            guard let value = object[key], value != .null else { return nil }
            return value
        }
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "-" }
            return value.stringValue ?? value.serialized()
        }
        var lines: [String] = []
        var headline = "ccsd"
        if let version = take("version") { headline += " " + text(version) }
        if let state = take("lifecycle") ?? take("state") { headline += ": " + text(state) }
        var store = take("store_writable").flatMap(\.boolValue)
        if let storeObject = take("store")?.objectValue {
            store = storeObject["writable"]?.boolValue ?? store
        }
        if let store { headline += store ? ", store writable" : ", STORE NOT WRITABLE" }
        if let uptime = take("uptime_seconds") { headline += ", up \(text(uptime)) s" }
        lines.append(headline)

        let connections = take("connections")?.arrayValue ?? []
        let ready = take("connections_ready")?.intValue.map(Int.init)
            ?? connections.filter { $0["state"]?.stringValue == "ready" }.count
        lines.append("connections: \(connections.count) (\(ready) ready)")
        if !connections.isEmpty {
            let rows = connections.map { connection -> [String] in
                let inFlight = text(connection["in_flight"])
                let window = connection["window"].map { "/" + text($0) } ?? ""
                return [text(connection["id"]), text(connection["endpoint"]), text(connection["state"]), inFlight + window]
            }
            lines += table(header: ["ID", "ENDPOINT", "STATE", "IN FLIGHT"], rows: rows).map { "  " + $0 }
        }
        var queue: [String] = []
        var queueObject = take("queue")?.objectValue ?? [:]
        for key in ["queued", "in_flight", "outstanding"] {
            if let value = take(key) { queueObject[key] = value }
        }
        for (key, label) in [("queued", "queued"), ("depth", "queued"), ("in_flight", "in flight"), ("outstanding", "not yet final")] {
            if let value = queueObject.removeValue(forKey: key) { queue.append("\(text(value)) \(label)") }
        }
        queue += queueObject.keys.sorted().map { "\($0) \(text(queueObject[$0]))" }
        if let limit = take("max_queued") { queue.append("limit \(text(limit))") }
        if !queue.isEmpty { lines.append("queue: " + queue.joined(separator: ", ")) }
        if let counters = take("counters")?.objectValue, !counters.isEmpty {
            lines.append("since start: " + counters.keys.sorted().map { "\($0) \(text(counters[$0]))" }.joined(separator: ", "))
        }

        // Only when the service reports them: an absent list is not "no errors".
        let errors = take("recent_errors")?.arrayValue
        if let errors { lines.append(errors.isEmpty ? "recent errors: none" : "recent errors:") }
        for error in errors ?? [] {
            guard let fields = error.objectValue else {
                lines.append("  " + text(error))
                continue
            }
            var parts: [String] = []
            if let time = fields["time"] { parts.append(text(time)) }
            if let level = fields["level"] { parts.append(text(level)) }
            if let connection = fields["connection"], connection != .null { parts.append("connection \(text(connection))") }
            if let id = fields["message_id"], id != .null { parts.append(text(id)) }
            let known: Set = ["time", "level", "connection", "message_id", "message", "error", "code", "description", "fields"]
            var message = [fields["code"], fields["error"], fields["message"], fields["description"]]
                .compactMap { $0 }.filter { $0 != .null }.map { text($0) }.joined(separator: ": ")
            for key in fields.keys.sorted() where !known.contains(key) {
                message += " \(key)=\(text(fields[key]))"
            }
            // The log line's metadata (`fields` of a log entry), as the log writes it: key=value.
            if let metadata = fields["fields"]?.objectValue {
                for key in metadata.keys.sorted() { message += " \(key)=\(text(metadata[key]))" }
            }
            lines.append("  " + (parts + [message]).joined(separator: "  "))
        }
        for key in object.keys.sorted() where !shown.contains(key) {
            lines.append("\(key): \(text(object[key]))")
        }
        return lines
    }

    /// Columns padded to their widest cell.
    static func table(header: [String], rows: [[String]]) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padded(to: widths[column])
            }.joined(separator: "  ")
        }
    }

    static func main(_ arguments: [String]) -> Int32 {
        run(arguments, environment: ProcessInfo.processInfo.environment, output: .standard)
    }

    static func run(_ arguments: [String], environment: [String: String], output: CommandOutput) -> Int32 {
        let options: Options
        let client: APIClient
        do {
            options = try Options.parse(arguments)
            if options.help {
                output.out(usage)
                return ClientExitCode.success
            }
            client = try options.api.client(environment: environment)
        } catch {
            output.err("ccsd status: \(error)\n(ccsd status --help for the options)")
            return ClientExitCode.usage
        }
        let response: APIResponse
        do {
            response = try client.request("GET", "/v1/status")
        } catch {
            output.err("ccsd status: \(error)")
            return ClientExitCode.unavailable
        }
        guard response.status == 200, let json = response.json else {
            output.err("ccsd status: \(response.errorSummary)")
            return ClientExitCode.unavailable
        }
        if options.json {
            output.out(String(decoding: response.body, as: UTF8.self).trimmingNewlines())
        } else {
            render(json).forEach(output.out)
        }
        return ClientExitCode.success
    }
}

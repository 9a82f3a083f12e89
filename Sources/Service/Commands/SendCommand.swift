import CCS
import Daemon
import FoundationEssentials

/// `ccsd send`: submits downstream messages to the running service (`POST /v1/messages`, docs/api.md) from
/// flags or from a file of JSON / JSON lines, prints each message's result, and with `--wait` polls
/// `GET /v1/messages/{id}` until each accepted message is final.
enum SendCommand {
    static let usage = """
        usage: ccsd send (--to TOKEN|TOPIC | --condition EXPR) [--data KEY=VALUE]... [--notification-title TEXT]
                         [--notification-body TEXT] [--priority high|normal] [--time-to-live SECONDS]
                         [--message-id ID] [--collapse-key KEY] [--wait [--wait-timeout SECONDS]] [API OPTIONS]
               ccsd send --file FILE|- [--wait [--wait-timeout SECONDS]] [API OPTIONS]

        Submits downstream messages to the running service (POST /v1/messages) and prints one line per message:
        "accepted ID" or "rejected ID: FIELD: RULE". The service validates each message like an intake line of
        `ccsd run` (legacy or FCM HTTP v1 shape).

          --to TOKEN|/topics/NAME     the registration token, topic or device group key
          --condition EXPR            a topic condition, e.g. "'news' in topics" (instead of --to)
          --data KEY=VALUE            a data payload entry (a string); repeat for more
          --notification-title TEXT   the notification's title
          --notification-body TEXT    the notification's body
          --priority high|normal      delivery priority
          --time-to-live SECONDS      0 to 2419200 (28 days); the message expires after it
          --message-id ID             the message_id (default: ccsd assigns one); resubmitting the same id is
                                      safe: a final one answers with its stored outcome
          --collapse-key KEY          the collapse key
          --file FILE|-               messages from a file (or stdin): one JSON object, a JSON array (at most
                                      1000 messages), or JSON lines (any number: sent 1000 per request, in
                                      order); not with the message flags above
          --wait                      wait until every accepted message is final and print its outcome
                                      ("acked ID", "nacked ID: ERROR", "expired ID")
          --wait-timeout SECONDS      give up waiting after this long (default: wait until final)
        \(APIOptions.usage(width: 28))
          -h, --help                  this text

        exit codes: 0 every message accepted (with --wait: acked), 1 a message was rejected, nacked or expired
        (the reason is printed), 2 usage (unknown flag, bad value, unreadable file), 3 ccsd could not be
        reached or answered with an error (e.g. 503 when its queue is full), 4 --wait-timeout passed first
        """

    /// What `ccsd send` was asked to do.
    struct Options: Equatable {
        var api = APIOptions()
        var to: String?
        var condition: String?
        /// Data entries in the order given (keys unique).
        var data: [(key: String, value: String)] = []
        var notificationTitle: String?
        var notificationBody: String?
        var priority: String?
        var timeToLive: Int?
        var messageID: String?
        var collapseKey: String?
        var file: String?
        var wait = false
        var waitTimeout: Double?
        var help = false

        static func == (a: Options, b: Options) -> Bool {
            a.api == b.api && a.to == b.to && a.condition == b.condition && a.data.map(\.key) == b.data.map(\.key)
                && a.data.map(\.value) == b.data.map(\.value) && a.notificationTitle == b.notificationTitle
                && a.notificationBody == b.notificationBody && a.priority == b.priority && a.timeToLive == b.timeToLive
                && a.messageID == b.messageID && a.collapseKey == b.collapseKey && a.file == b.file && a.wait == b.wait
                && a.waitTimeout == b.waitTimeout && a.help == b.help
        }

        static let messageFlags = ["--to", "--condition", "--data", "--notification-title", "--notification-body",
                                   "--priority", "--time-to-live", "--message-id", "--collapse-key"]
        static let flags = messageFlags + ["--file", "--wait", "--wait-timeout", "--help"] + APIOptions.flags

        /// Parses the arguments after `send`.
        /// - Throws: `UsageError` naming the flag and the rule.
        static func parse(_ arguments: [String]) throws(UsageError) -> Options {
            var options = Options()
            var cursor = ArgumentCursor(arguments)
            var messageFlagSeen: String?
            while let flag = cursor.next() {
                if try options.api.take(flag, from: &cursor) { continue }
                if messageFlags.contains(flag) { messageFlagSeen = messageFlagSeen ?? flag }
                switch flag {
                case "--to": options.to = try cursor.value(flag)
                case "--condition": options.condition = try cursor.value(flag)
                case "--data":
                    let entry = try cursor.value(flag)
                    guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                        throw UsageError(flag, "must be KEY=VALUE with a non-empty KEY, got \"\(entry)\"")
                    }
                    let key = String(entry[..<equals])
                    guard !options.data.contains(where: { $0.key == key }) else {
                        throw UsageError(flag, "the key \"\(key)\" is given twice")
                    }
                    options.data.append((key, String(entry[entry.index(after: equals)...])))
                case "--notification-title": options.notificationTitle = try cursor.value(flag)
                case "--notification-body": options.notificationBody = try cursor.value(flag)
                case "--priority":
                    let text = try cursor.value(flag)
                    guard text == "high" || text == "normal" else {
                        throw UsageError(flag, "must be high or normal, got \"\(text)\"")
                    }
                    options.priority = text
                case "--time-to-live": options.timeToLive = try cursor.integer(flag, 0...2_419_200)
                case "--message-id": options.messageID = try cursor.value(flag)
                case "--collapse-key": options.collapseKey = try cursor.value(flag)
                case "--file":
                    guard let path = cursor.next(), !path.isEmpty else { throw UsageError(flag, "needs a value") }
                    options.file = path
                case "--wait": options.wait = true
                case "--wait-timeout": options.waitTimeout = try cursor.seconds(flag, 0.1...31_536_000)
                case "-h", "--help": options.help = true
                default: throw ArgumentCursor.unknown(flag, known: flags)
                }
            }
            if options.help { return options }
            if options.file != nil {
                if let messageFlagSeen {
                    throw UsageError(messageFlagSeen, "cannot be combined with --file (put it in the file's messages)")
                }
            } else {
                if options.to == nil, options.condition == nil {
                    throw UsageError("--to", "required: the target (a registration token or /topics/NAME), or --condition")
                }
                if options.to != nil, options.condition != nil {
                    throw UsageError("--condition", "give either --to or --condition, not both")
                }
            }
            if options.waitTimeout != nil, !options.wait {
                throw UsageError("--wait-timeout", "only with --wait")
            }
            return options
        }

        /// The message these flags describe, in the legacy shape (ccs-protocol.md §3): `data` values are
        /// strings, `notification` has `title`/`body`, `time_to_live` is seconds.
        var message: JSONValue {
            var object: [String: JSONValue] = [:]
            if let to { object["to"] = .string(to) }
            if let condition { object["condition"] = .string(condition) }
            if !data.isEmpty {
                object["data"] = .object(Dictionary(uniqueKeysWithValues: data.map { ($0.key, JSONValue.string($0.value)) }))
            }
            var notification: [String: JSONValue] = [:]
            if let notificationTitle { notification["title"] = .string(notificationTitle) }
            if let notificationBody { notification["body"] = .string(notificationBody) }
            if !notification.isEmpty { object["notification"] = .object(notification) }
            if let priority { object["priority"] = .string(priority) }
            if let timeToLive { object["time_to_live"] = .int(Int64(timeToLive)) }
            if let messageID { object["message_id"] = .string(messageID) }
            if let collapseKey { object["collapse_key"] = .string(collapseKey) }
            return .object(object)
        }
    }

    /// A request body and its media type.
    struct Body: Equatable {
        var data: Data
        var contentType: String
    }

    /// The body for a file's text: `application/json` when the whole text is one JSON value (an object or an
    /// array of them), else `application/x-ndjson` (JSON lines; the service names a bad line).
    static func body(fileContents: Data) -> Body {
        if (try? JSONValue.parse(fileContents)) != nil {
            return Body(data: fileContents, contentType: "application/json")
        }
        return Body(data: fileContents, contentType: "application/x-ndjson")
    }

    /// The requests for a file's text: one `body(fileContents:)`, except that JSON lines go in requests of at
    /// most `linesPerRequest` lines (the API takes at most 1000 messages per request), in order.
    static func bodies(fileContents: Data, linesPerRequest: Int = 1000) -> [Body] {
        let body = body(fileContents: fileContents)
        guard body.contentType == "application/x-ndjson" else { return [body] }
        var requests: [Body] = []
        var chunk = Data()
        var lines = 0
        for line in fileContents.split(separator: 0x0A, omittingEmptySubsequences: true) {
            chunk.append(contentsOf: line)
            chunk.append(0x0A)
            lines += 1
            if lines == linesPerRequest {
                requests.append(Body(data: chunk, contentType: body.contentType))
                chunk = Data()
                lines = 0
            }
        }
        if lines > 0 || requests.isEmpty { requests.append(Body(data: chunk, contentType: body.contentType)) }
        return requests
    }

    /// What one `POST /v1/messages` answer means: the lines to print, the exit code so far, and the messages
    /// to wait for (accepted ones, by message_id).
    struct Submission: Equatable {
        var lines: [String] = []
        var errors: [String] = []
        var exitCode: Int32 = ClientExitCode.success
        var accepted: [String] = []
        /// Messages already final before this submission (a resubmitted message_id): their stored outcome.
        var alreadyFinal: [(id: String, outcome: JSONValue)] = []

        static func == (a: Submission, b: Submission) -> Bool {
            a.lines == b.lines && a.errors == b.errors && a.exitCode == b.exitCode && a.accepted == b.accepted
                && a.alreadyFinal.map(\.id) == b.alreadyFinal.map(\.id) && a.alreadyFinal.map(\.outcome) == b.alreadyFinal.map(\.outcome)
        }
    }

    /// Reads the answer to `POST /v1/messages` (docs/api.md: 202 with `results`, or an error object).
    static func submission(_ response: APIResponse) -> Submission {
        var result = Submission()
        guard response.status == 202 || response.status == 200,
              let results = response.json?["results"]?.arrayValue else {
            result.errors.append("ccsd send: the service refused the submission: \(response.errorSummary)")
            result.exitCode = ClientExitCode.unavailable
            return result
        }
        for item in results {
            let id = item["message_id"]?.stringValue
            let index = item["index"]?.intValue.map { "#\($0)" } ?? "#?"
            switch item["status"]?.stringValue {
            case "accepted":
                result.lines.append("accepted \(id ?? index)")
                if let id { result.accepted.append(id) }
            default:
                let reason = item["error"]?.stringValue
                    ?? [item["field"]?.stringValue, item["rule"]?.stringValue].compactMap { $0 }.joined(separator: ": ")
                let retry = item["retryable"]?.boolValue == true ? " (retryable: submit it again later)" : ""
                if let id, let outcome = item["outcome"], outcome.objectValue != nil {
                    // A message_id that is already final: its stored outcome is the answer.
                    result.lines.append("already final \(id): \(describe(outcome: outcome))")
                    result.alreadyFinal.append((id, outcome))
                    if outcome["event"]?.stringValue != "acked" { result.exitCode = ClientExitCode.messageFailed }
                } else {
                    result.lines.append("rejected \(id ?? index): \(reason)\(retry)")
                    result.exitCode = ClientExitCode.messageFailed
                }
            }
        }
        return result
    }

    /// A final event in one line: `acked`, `nacked: ERROR (description)`, `expired`.
    static func describe(outcome: JSONValue) -> String {
        let event = outcome["event"]?.stringValue ?? "final"
        guard event == "nacked" else { return event }
        var text = "nacked: " + (outcome["error"]?.stringValue ?? "unknown error")
        if let description = outcome["description"]?.stringValue, !description.isEmpty { text += " (\(description))" }
        if outcome["invalid_token"]?.boolValue == true { text += "; the registration token is invalid: remove it" }
        return text
    }

    /// What one `GET /v1/messages/{id}` answer says: still pending, final with its outcome line and whether it
    /// was acked, or an error.
    enum Progress: Equatable {
        case pending(state: String)
        case final(line: String, acked: Bool)
        case failed(String)
    }

    static func progress(of id: String, _ response: APIResponse) -> Progress {
        if response.status == 404 {
            return .failed("\(id): ccsd no longer holds this message (see its final event in `ccsd events`)")
        }
        guard response.status == 200, let json = response.json else {
            return .failed("\(id): \(response.errorSummary)")
        }
        let state = json["state"]?.stringValue ?? "unknown"
        guard state == "final", let outcome = json["outcome"], outcome.objectValue != nil else {
            return .pending(state: state)
        }
        return .final(line: outcomeLine(id: id, outcome: outcome), acked: outcome["event"]?.stringValue == "acked")
    }

    /// `acked ID`, `nacked ID: ERROR (description)`, `expired ID`.
    static func outcomeLine(id: String, outcome: JSONValue) -> String {
        let text = describe(outcome: outcome)
        guard let colon = text.firstIndex(of: ":") else { return "\(text) \(id)" }
        return "\(text[..<colon]) \(id)\(text[colon...])"
    }

    /// `message_id` as a path segment of `/v1/messages/{id}`.
    /// Every byte of its UTF-8 but RFC 3986's unreserved characters (ASCII letters, digits, `-._~`) is
    /// percent-encoded.
    static func messagePath(_ id: String) -> String {
        var path = "/v1/messages/"
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                path.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                path += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
            }
        }
        return path
    }

    static func main(_ arguments: [String]) -> Int32 {
        run(arguments, environment: ProcessInfo.processInfo.environment, output: .standard)
    }

    static func run(_ arguments: [String], environment: [String: String], output: CommandOutput,
                    readFile: (String) throws -> Data = readInput) -> Int32 {
        let options: Options
        let client: APIClient
        let bodies: [Body]
        do {
            options = try Options.parse(arguments)
            if options.help {
                output.out(usage)
                return ClientExitCode.success
            }
            client = try options.api.client(environment: environment)
            if let file = options.file {
                let contents: Data
                do {
                    contents = try readFile(file)
                } catch let error as UsageError {
                    throw error
                } catch {
                    throw UsageError("--file", "cannot read \(file): \(error)")
                }
                bodies = Self.bodies(fileContents: contents)
            } else {
                bodies = [Body(data: Data(options.message.serialized().utf8), contentType: "application/json")]
            }
        } catch {
            output.err("ccsd send: \(error)\n(ccsd send --help for the options)")
            return ClientExitCode.usage
        }
        var exitCode = ClientExitCode.success
        var accepted: [String] = []
        for body in bodies {
            let response: APIResponse
            do {
                response = try client.request("POST", "/v1/messages", body: body.data, contentType: body.contentType)
            } catch {
                output.err("ccsd send: \(error)")
                return ClientExitCode.unavailable
            }
            let submission = submission(response)
            submission.lines.forEach(output.out)
            submission.errors.forEach(output.err)
            exitCode = max(exitCode, submission.exitCode)
            accepted += submission.accepted
            // Not accepted (503, an HTTP error): the later requests would be refused alike.
            if submission.exitCode == ClientExitCode.unavailable { return exitCode }
        }
        guard options.wait else { return exitCode }
        let waited = wait(for: accepted, client: client, timeout: options.waitTimeout, output: output)
        return max(exitCode, waited)
    }

    /// Polls each message until it is final (every 0.2 s at first, backing off to 2 s); prints each outcome.
    /// Returns 0 when all were acked, 1 when one was nacked or expired, 3 on an API error, 4 on timeout.
    static func wait(for ids: [String], client: APIClient, timeout: Double?, output: CommandOutput) -> Int32 {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var pending = ids
        var exitCode = ClientExitCode.success
        var interval = 0.2
        while !pending.isEmpty {
            var still: [String] = []
            for id in pending {
                let progress: Progress
                do {
                    progress = Self.progress(of: id, try client.request("GET", messagePath(id)))
                } catch {
                    output.err("ccsd send: \(error)")
                    return ClientExitCode.unavailable
                }
                switch progress {
                case .pending: still.append(id)
                case .final(let line, let acked):
                    output.out(line)
                    if !acked { exitCode = max(exitCode, ClientExitCode.messageFailed) }
                case .failed(let message):
                    output.err("ccsd send: \(message)")
                    exitCode = ClientExitCode.unavailable
                }
            }
            pending = still
            guard !pending.isEmpty else { break }
            if let deadline, Date().addingTimeInterval(interval) > deadline {
                output.err("ccsd send: --wait-timeout passed; not final yet: \(pending.joined(separator: ", "))")
                return max(exitCode, ClientExitCode.waitTimedOut)
            }
            DetachedThread.sleep(seconds: interval)
            interval = min(interval * 1.5, 2)
        }
        return exitCode
    }

    /// A file's contents, or stdin's for `-`.
    /// - Throws: `UsageError` for `--file` with the system's reason.
    static func readInput(_ path: String) throws -> Data {
        if path == "-" { return StandardStreams.readInput() }
        do {
            return try Configuration.readFile(path, field: "--file")
        } catch {
            throw UsageError("--file", error.rule)
        }
    }
}

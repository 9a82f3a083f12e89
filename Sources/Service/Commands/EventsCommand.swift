import CCS
import FoundationEssentials

/// `ccsd events`: reads the running service's events feed (`GET /v1/events`, docs/api.md) and prints one JSON
/// line per event, the same objects as `ccsd run --events`; `--follow` keeps long-polling, `--ack` records
/// each printed page with `POST /v1/events/ack` so the store may prune it.
enum EventsCommand {
    static let usage = """
        usage: ccsd events [--after SEQ] [--follow [--poll-seconds N]] [--ack] [--limit N] [API OPTIONS]

        Prints the events of the running service, one JSON object per line, in order (each with its "seq"):
        accepted, rejected, acked, nacked, expired, upstream, receipt, connection.

          --after SEQ            start after this seq (default: after the last one acknowledged with --ack, else
                                 from the start of the journal)
          --follow               keep following: wait for new events (long polls) until interrupted; if ccsd
                                 restarts, resume where the feed stopped (retrying with backoff up to 30 s)
          --poll-seconds N       how long each long poll waits for a new event, 1 to 60 (default 30)
          --ack                  after printing each page, acknowledge it (POST /v1/events/ack): the consumer
                                 "api" has these events and the store may prune them
          --limit N              events per request, 1 to 1000 (default 100)
        \(APIOptions.usage(width: 23))
          -h, --help             this text

        Without --follow, prints the events there are now and exits.

        exit codes: 0 the feed was read to its end (without --follow), 1 stdout could not be written (what was
        not printed was not acknowledged), 2 usage, 3 ccsd could not be reached or answered with an error
        """

    struct Options: Equatable {
        var api = APIOptions()
        var after: Int64?
        var follow = false
        var pollSeconds = 30
        var ack = false
        var limit = 100
        var help = false

        static let flags = ["--after", "--follow", "--poll-seconds", "--ack", "--limit", "--help"] + APIOptions.flags

        /// Parses the arguments after `events`.
        /// - Throws: `UsageError` naming the flag and the rule.
        static func parse(_ arguments: [String]) throws(UsageError) -> Options {
            var options = Options()
            var cursor = ArgumentCursor(arguments)
            while let flag = cursor.next() {
                if try options.api.take(flag, from: &cursor) { continue }
                switch flag {
                case "--after":
                    let text = try cursor.value(flag)
                    guard let seq = Int64(text), seq >= 0 else {
                        throw UsageError(flag, "must be an event seq (an integer from 0), got \"\(text)\"")
                    }
                    options.after = seq
                case "--follow", "-f": options.follow = true
                case "--poll-seconds": options.pollSeconds = try cursor.integer(flag, 1...60)
                case "--ack": options.ack = true
                case "--limit": options.limit = try cursor.integer(flag, 1...1000)
                case "-h", "--help": options.help = true
                default: throw ArgumentCursor.unknown(flag, known: flags)
                }
            }
            return options
        }

        /// The request target for the page after `after` (nil: the service's cursor for consumer `api`).
        func path(after: Int64?, wait: Int) -> String {
            var query = ["limit=\(limit)"]
            if let after { query.insert("after=\(after)", at: 0) }
            if wait > 0 { query.append("wait=\(wait)") }
            return "/v1/events?" + query.joined(separator: "&")
        }
    }

    /// One page of the feed: its events as printed lines and the cursor to ask with next.
    struct Page: Equatable {
        var lines: [String]
        var next: Int64?
    }

    /// Reads a `GET /v1/events` answer (`{"events":[…],"next":N}`). Each event is printed as the exact text
    /// the answer holds (ccsd's journaled text: its key order, numbers digit for digit), cut out of the body
    /// by `JSONArrayElements`, never parsed and written again.
    /// - Returns: nil when the answer is not such an object (the caller reports `response.errorSummary`).
    static func page(_ response: APIResponse) -> Page? {
        guard response.status == 200, let json = response.json, let events = json["events"]?.arrayValue else {
            return nil
        }
        let bytes = [UInt8](response.body)
        guard let array = JSONTokenScan.firstToken(at: ["events"], in: bytes), array.text == "[",
              case .elements(let ranges, _) = JSONArrayElements.scan(bytes, openingAt: array.range.lowerBound),
              ranges.count == events.count else { return nil }
        let next = json["next"]?.intValue ?? events.last?["seq"]?.intValue
        return Page(lines: ranges.map { String(decoding: bytes[$0], as: UTF8.self) }, next: next)
    }

    static func main(_ arguments: [String]) -> Int32 {
        run(arguments, environment: ProcessInfo.processInfo.environment, output: .standard)
    }

    /// Runs the command. `maxRequests` bounds the requests (tests); nil follows until interrupted.
    static func run(_ arguments: [String], environment: [String: String], output: CommandOutput,
                    maxRequests: Int? = nil) -> Int32 {
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
            output.err("ccsd events: \(error)\n(ccsd events --help for the options)")
            return ClientExitCode.usage
        }
        var after = options.after
        var requests = 0
        var answeredOnce = false
        var retryDelay = 1.0
        while maxRequests.map({ requests < $0 }) ?? true {
            requests += 1
            let wait = options.follow ? options.pollSeconds : 0
            let page: Page
            do {
                let response = try client.request("GET", options.path(after: after, wait: wait),
                                                  timeout: client.requestTimeout + Double(wait))
                guard let read = Self.page(response) else {
                    output.err("ccsd events: \(response.errorSummary)")
                    // A refusal (bad cursor, token) does not heal by asking again.
                    if !options.follow || !answeredOnce || response.status < 500 { return ClientExitCode.unavailable }
                    throw APIClientError(kind: .failed, message: response.errorSummary)
                }
                page = read
                answeredOnce = true
                retryDelay = 1
            } catch {
                guard options.follow, answeredOnce else {
                    output.err("ccsd events: \(error)")
                    return ClientExitCode.unavailable
                }
                // Following: ccsd may be restarting. The journal is durable, so asking again with the same
                // cursor loses nothing; back off so that a stopped service is not hammered.
                output.err("ccsd events: \(error); retrying in \(APIClient.formatSeconds(retryDelay)) s")
                DetachedThread.sleep(seconds: retryDelay)
                retryDelay = min(retryDelay * 2, 30)
                continue
            }
            page.lines.forEach(output.out)
            if let next = page.next { after = next }
            if options.ack, !page.lines.isEmpty, let through = page.next {
                let body = Data(JSONValue.object(["through": .int(through)]).serialized().utf8)
                do {
                    let response = try client.request("POST", "/v1/events/ack", body: body)
                    guard response.status == 200 else {
                        output.err("ccsd events: acknowledging through \(through) failed: \(response.errorSummary)")
                        return ClientExitCode.unavailable
                    }
                } catch {
                    output.err("ccsd events: acknowledging through \(through) failed: \(error)")
                    return ClientExitCode.unavailable
                }
            }
            if !options.follow, page.lines.count < options.limit { return ClientExitCode.success }
        }
        return ClientExitCode.success
    }
}

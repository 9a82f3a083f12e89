import CCS
import Daemon
import Dispatch
import FoundationEssentials
import Glibc
import HTTPServer
import Store
import TLS

/// The routes of `ccsd serve` (docs/api.md) on a running `CCSDaemon`: a `HTTPServer.Handler` that runs on
/// the daemon's loop. Messages go in through `CCSDaemon.submitFromAPI` (answered once durable), events come
/// out of the store's journal (long poll woken by commits), health and status from `CCSDaemon.snapshot()`,
/// metrics from the injected `metricsText`.
///
/// Confined to the loop.
public final class APIRouter: @unchecked Sendable {
    // @unchecked Sendable: every stored property is touched only on the loop.

    /// Settings of the API.
    public struct Options: Sendable, Equatable {
        /// The longest `wait` of `GET /v1/events`, seconds.
        public var maxWaitSeconds: Int
        /// Messages one `POST /v1/messages` may hold (more: 413). Validating and submitting a batch runs on the
        /// event loop, so this bounds how long one request holds it (ACKs and keepalives wait meanwhile).
        public var maxBatchMessages: Int

        public init(maxWaitSeconds: Int = 60, maxBatchMessages: Int = 1000) {
            self.maxWaitSeconds = maxWaitSeconds
            self.maxBatchMessages = maxBatchMessages
        }
    }

    private let daemon: CCSDaemon
    private let loop: EventLoop
    private let options: Options
    private let metricsText: () -> String
    private let recentErrors: RecentLogEntries?
    private let idPrefix: String
    private var nextID = 0
    /// Set at SIGTERM/SIGINT: submissions get 503 from then on.
    public var stopping = false
    /// The last seq a commit journaled (from the daemon's observer), 0 before the first.
    private var lastJournaledSeq: Int64 = 0
    /// Cursors acknowledged through the API and maybe not committed yet (they ride on the next commit).
    private var acknowledged: [String: Int64] = [:]
    private var waiters: [EventWaiter] = []

    private final class EventWaiter: @unchecked Sendable {
        // @unchecked Sendable: used only on the loop (the store's answers come back on it).
        let after: Int64
        let limit: Int
        let responder: HTTPResponder
        var timer: TimerHandle?
        var reading = false
        init(after: Int64, limit: Int, responder: HTTPResponder) {
            self.after = after
            self.limit = limit
            self.responder = responder
        }
    }

    /// - Parameters:
    ///   - daemon: the running daemon, on `loop`.
    ///   - metricsText: the Prometheus text exposition (format 0.0.4) for `GET /metrics`; called on the loop.
    ///   - recentErrors: the log's last warning and error lines, for `recent_errors` in `GET /v1/status`
    ///     (the member is left out when nil).
    public init(daemon: CCSDaemon, loop: EventLoop, options: Options = Options(), metricsText: @escaping () -> String,
                recentErrors: RecentLogEntries? = nil) {
        self.recentErrors = recentErrors
        self.daemon = daemon
        self.loop = loop
        self.options = options
        self.metricsText = metricsText
        var random = SystemRandomNumberGenerator()
        idPrefix = "ccsd-" + String(random.next() & 0xFFFF_FFFF, radix: 36) + "-"
    }

    /// Starts observing the journal (the long poll's wake-up). Call on the loop, once, before serving.
    public func attach() {
        daemon.observeJournal { [weak self] seq in self?.journaled(through: seq) }
    }

    /// Answers every waiting long poll now (with what it has), e.g. before the server stops.
    public func releaseWaiters() {
        for waiter in waiters { respondEvents(waiter, events: [], next: waiter.after) }
        waiters.removeAll()
    }

    // MARK: Routing

    /// Routes one request (the `HTTPServer.Handler`). Call on the loop.
    public func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        let path = request.path
        let method = request.method
        func only(_ allowed: [String], _ route: () -> Void) {
            if allowed.contains(method) || (method == "HEAD" && allowed.contains("GET")) {
                route()
            } else {
                responder.respond(.error(405, code: "method_not_allowed", message: "\(method) is not allowed on \(path); use \(allowed.joined(separator: ", "))",
                                         headers: [("Allow", allowed.joined(separator: ", "))]))
            }
        }
        switch path {
        case "/healthz": only(["GET"]) { responder.respond(.json(200, "{\"status\":\"alive\"}")) }
        case "/readyz": only(["GET"]) { responder.respond(readiness()) }
        case "/metrics":
            only(["GET"]) {
                responder.respond(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                                               body: Data(metricsText().utf8)))
            }
        case "/v1/status": only(["GET"]) { responder.respond(.json(200, statusJSON())) }
        case "/v1/messages": only(["POST"]) { submit(request, responder) }
        case "/v1/events": only(["GET"]) { events(request, responder) }
        case "/v1/events/ack": only(["POST"]) { acknowledge(request, responder) }
        default:
            if path.hasPrefix("/v1/messages/"), path.count > "/v1/messages/".count {
                // The path is decoded already (libmicrohttpd): decoding it again would take `%41` in an id for `A`.
                let messageID = String(path.dropFirst("/v1/messages/".count))
                only(["GET"]) { message(messageID, responder) }
            } else {
                responder.respond(.error(404, code: "not_found", message: "no route \(method) \(path)"))
            }
        }
    }

    // MARK: Health and status

    private func readiness() -> HTTPResponse {
        let snapshot = daemon.snapshot()
        var missing: [String] = []
        if !snapshot.storeWritable { missing.append("the store cannot take writes") }
        if snapshot.readyConnections == 0 { missing.append("no connection is ready") }
        if snapshot.lifecycle != "running" { missing.append("ccsd is \(snapshot.lifecycle)") }
        let fields = "\"connections_ready\":\(snapshot.readyConnections),\"store_writable\":\(snapshot.storeWritable),"
            + "\"lifecycle\":\(HTTPResponse.jsonString(snapshot.lifecycle))"
        if missing.isEmpty { return .json(200, "{\"status\":\"ready\",\(fields)}") }
        let reasons = missing.map(HTTPResponse.jsonString).joined(separator: ",")
        return .json(503, "{\"status\":\"not_ready\",\(fields),\"missing\":[\(reasons)]}")
    }

    /// `GET /v1/status`: the daemon's snapshot as JSON.
    func statusJSON() -> String {
        let snapshot = daemon.snapshot()
        let connections = snapshot.connections.map { connection in
            "{\"id\":\(connection.id),\"endpoint\":\(HTTPResponse.jsonString(connection.endpoint.description)),"
                + "\"state\":\"\(connection.state.rawValue)\",\"in_flight\":\(connection.inFlight),\"window\":\(connection.window)}"
        }.joined(separator: ",")
        let c = snapshot.counters
        let counters: [(String, Int)] = [
            ("sent", c.sent), ("acked", c.acked), ("nacked", c.nacked), ("retried", c.retried), ("expired", c.expired),
            ("rejected", c.rejected), ("upstream", c.upstream), ("upstream_duplicates", c.upstreamDuplicates),
            ("receipts", c.receipts), ("drains", c.drains), ("reconnects", c.reconnects),
            ("failed_connections", c.failedConnections), ("refused_connections", c.refusedConnections),
            ("ack_timeouts", c.ackTimeouts)]
        return "{\"lifecycle\":\(HTTPResponse.jsonString(snapshot.lifecycle)),\"connections\":[\(connections)],"
            + "\"connections_ready\":\(snapshot.readyConnections),\"outstanding\":\(snapshot.outstanding),"
            + "\"queued\":\(snapshot.queued),\"in_flight\":\(snapshot.inFlight),\"store_writable\":\(snapshot.storeWritable),"
            + "\"max_queued\":\(daemon.configuration.maxQueued),\"event_waiters\":\(waiters.count),"
            + "\"counters\":{" + counters.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
            + (recentErrors.map { ",\"recent_errors\":" + Self.recentErrorsJSON($0.entries) } ?? "") + "}"
    }

    /// `recent_errors`: `[{"time":…,"level":…,"message":…,"fields":{…}}]`, oldest first.
    static func recentErrorsJSON(_ entries: [RecentLogEntries.Entry]) -> String {
        "[" + entries.map { entry in
            "{\"time\":\(HTTPResponse.jsonString(entry.time)),\"level\":\"\(entry.level)\","
                + "\"message\":\(HTTPResponse.jsonString(entry.message)),\"fields\":{"
                + entry.fields.map { HTTPResponse.jsonString($0.key) + ":" + HTTPResponse.jsonString($0.value) }.joined(separator: ",")
                + "}}"
        }.joined(separator: ",") + "]"
    }

    // MARK: Messages

    private static let jsonTypes = ["application/json", "application/x-ndjson", "application/jsonl", "application/json-lines",
                                    "application/x-jsonlines"]

    private func submit(_ request: HTTPRequest, _ responder: HTTPResponder) {
        if let type = request.header("Content-Type") {
            let mediaType = type.split(separator: ";").first.map { $0.trimmingWhitespace().lowercased() } ?? ""
            guard Self.jsonTypes.contains(mediaType) else {
                responder.respond(.error(415, code: "unsupported_media_type",
                                         message: "Content-Type \(mediaType) is not JSON; use application/json (one message or an array) or application/x-ndjson (JSON lines)"))
                return
            }
        }
        if stopping {
            responder.respond(.error(503, code: "unavailable", message: "ccsd is stopping; nothing was accepted", headers: [("Retry-After", "5")]))
            return
        }
        // Parsing and validating is off the loop (one request's body must not hold ACKs and keepalives), on
        // one serial queue (submissions keep their arrival order); submitting is back on the loop.
        let jsonLines = ["application/x-ndjson", "application/jsonl", "application/json-lines", "application/x-jsonlines"]
            .contains(where: { request.header("Content-Type")?.lowercased().hasPrefix($0) == true })
        let limit = options.maxBatchMessages
        let body = request.body
        Self.parseQueue.async { [weak self] in
            let parsed = Self.split(body, jsonLines: jsonLines, maxMessages: limit).map { Self.parse($0, now: Date()) }
            self?.loop.execute { [weak self] in self?.submit(parsed, responder) }
        }
    }

    /// Where request bodies are parsed and validated: off the loop, one at a time.
    private static let parseQueue = DispatchQueue(label: "ccsd.api.parse", qos: .userInitiated)

    /// Submits parsed items (on the loop): a message without message_id gets one here.
    private func submit(_ parsed: Result<[CCSDaemon.IntakeItem], RequestError>, _ responder: HTTPResponder) {
        let parsedItems: [CCSDaemon.IntakeItem]
        switch parsed {
        case .success(let items): parsedItems = items
        case .failure(let error):
            responder.respond(error.response)
            return
        }
        if stopping {
            responder.respond(.error(503, code: "unavailable", message: "ccsd is stopping; nothing was accepted", headers: [("Retry-After", "5")]))
            return
        }
        let items = parsedItems.map { item -> CCSDaemon.IntakeItem in
            guard case .message(let message, let line) = item, message.messageID == nil else { return item }
            nextID += 1
            return .message(message.withMessageID(idPrefix + String(nextID)), line: line)
        }
        let refusal = daemon.submitFromAPI(items, maxQueued: daemon.configuration.maxQueued) { results in
            responder.respond(Self.submissionResponse(results))
        }
        if let refusal {
            let retryAfter = switch refusal { case .queueFull, .eventBacklogFull: "1"; default: "5" }
            responder.respond(.error(503, code: "unavailable", message: "\(refusal); nothing was accepted",
                                     headers: [("Retry-After", retryAfter)]))
        }
    }

    struct RequestError: Error {
        let response: HTTPResponse
        static func badJSON(_ message: String) -> RequestError {
            RequestError(response: .error(400, code: "bad_json", message: message))
        }
        static func badRequest(_ message: String) -> RequestError {
            RequestError(response: .error(400, code: "bad_request", message: message))
        }
        static func tooManyMessages(_ limit: Int) -> RequestError {
            RequestError(response: .error(413, code: "body_too_large",
                                          message: "the batch holds more than \(limit) messages, the most one request may hold; split it (nothing was accepted)"))
        }
    }

    /// The messages of a body, each as the exact bytes it was written in: one JSON object, a JSON array of
    /// them (each element's byte range, `JSONArrayElements`), or JSON lines (each line). Nothing is parsed
    /// and written again, so each message reaches the validator as `ccsd run` would read it as a line.
    /// - Returns: `bad_json` naming the line, the message's position and byte offset, or the parser's
    ///   offset when the body (or one message) is not JSON (a number no Double holds, like `1e400`, and
    ///   nesting deeper than the limit do not count: they are the message's validation errors);
    ///   `body_too_large` (413) when it holds more than `maxMessages` messages (counted before parsing).
    static func split(_ body: Data, jsonLines: Bool, maxMessages: Int = Int.max) -> Result<[Data], RequestError> {
        let bytes = [UInt8](body)
        guard let first = bytes.firstIndex(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else {
            return .failure(.badRequest("the body holds no message"))
        }
        if !jsonLines {
            if bytes[first] == UInt8(ascii: "[") {
                // Counted before parsing: the values of 100k small messages would take hundreds of MB.
                switch JSONArrayElements.scan(bytes, openingAt: first, atMost: maxMessages) {
                case .moreThan:
                    return .failure(.tooManyMessages(maxMessages))
                case .malformed(let offset, let reason):
                    return .failure(.badJSON("the body is not JSON: \(reason) (byte \(offset))"))
                case .elements(let ranges, let end):
                    if let extra = bytes[end...].firstIndex(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
                        return .failure(.badJSON("the body is not JSON: text after the array (byte \(extra))"))
                    }
                    guard !ranges.isEmpty else { return .failure(.badRequest("the array holds no message")) }
                    var messages: [Data] = []
                    for (index, range) in ranges.enumerated() {
                        let message = Data(bytes[range])
                        if let problem = notJSON(message) {
                            return .failure(.badJSON("message \(index) (byte \(range.lowerBound)) is not JSON: \(problem)"))
                        }
                        messages.append(message)
                    }
                    return .success(messages)
                }
            }
            if let problem = notJSON(body) {
                // Several objects on lines of their own, sent as application/json: JSON lines.
                let lines = body.split(separator: 0x0A).filter { line in line.contains { ![0x20, 0x09, 0x0D].contains($0) } }
                if lines.count > 1, bytes[first] == UInt8(ascii: "{") { return split(body, jsonLines: true, maxMessages: maxMessages) }
                return .failure(.badJSON("the body is not JSON: \(problem)"))
            }
            return .success([body])
        }
        var messages: [Data] = []
        for (number, line) in body.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { continue }
            guard messages.count < maxMessages else { return .failure(.tooManyMessages(maxMessages)) }
            if let problem = notJSON(Data(line)) {
                return .failure(.badJSON("line \(number + 1) is not JSON: \(problem)"))
            }
            messages.append(Data(line))
        }
        guard !messages.isEmpty else { return .failure(.badRequest("the body holds no message")) }
        return .success(messages)
    }

    /// Why `text` is not JSON, or nil when it is. A number no Double holds (`1e400`) and nesting deeper
    /// than `JSONNesting.maxDepth` leave the text JSON: the validator refuses that message for them, naming
    /// the field and the rule, as `ccsd run` does for such a line, and the rest of the batch is taken.
    static func notJSON(_ text: Data) -> String? {
        do {
            _ = try JSONValue.parse(text)
            return nil
        } catch {
            if error.message == JSONNesting.rule { return nil }
            // With such numbers set aside (their replacement keeps every byte offset), the error past them.
            do {
                _ = try JSONValue.parseReplacingUnrepresentableNumbers(text)
                return nil
            } catch {
                return "\(error)"
            }
        }
    }

    /// How many elements the top-level array of `body` has (0 when it is not an array), counting no further
    /// than `limit + 1` (a lexical scan: nothing is parsed).
    static func topLevelElements(_ body: Data, atMost limit: Int) -> Int {
        let bytes = [UInt8](body)
        guard let first = bytes.firstIndex(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }),
              bytes[first] == UInt8(ascii: "[") else { return 0 }
        switch JSONArrayElements.scan(bytes, openingAt: first, atMost: limit) {
        case .elements(let ranges, _): return ranges.count
        case .moreThan: return limit + 1
        case .malformed: return 0
        }
    }

    /// The messages of a request validated exactly like intake lines of `ccsd run`, each with its 1-based
    /// position in the request as its `line` (one without message_id gets it on the loop).
    static func parse(_ messages: [Data], now: Date) -> [CCSDaemon.IntakeItem] {
        messages.enumerated().map { index, data in CCSDaemon.IntakeItem.parsing([UInt8](data), line: index + 1, now: now) }
    }

    /// 202 with one result per message (docs/api.md, `POST /v1/messages`).
    static func submissionResponse(_ results: [SubmissionResult]) -> HTTPResponse {
        var accepted = 0
        var objects: [String] = []
        for (index, result) in results.enumerated() {
            switch result {
            case .accepted(let messageID):
                accepted += 1
                objects.append("{\"index\":\(index),\"message_id\":\(HTTPResponse.jsonString(messageID)),\"status\":\"accepted\"}")
            case .rejected(let messageID, let field, let rule, let value, let error, let retryable, let outcome):
                var object = "{\"index\":\(index)"
                if let messageID { object += ",\"message_id\":\(HTTPResponse.jsonString(messageID))" }
                object += ",\"status\":\"rejected\",\"field\":\(HTTPResponse.jsonString(field)),\"rule\":\(HTTPResponse.jsonString(rule))"
                if let value { object += ",\"value\":\(HTTPResponse.jsonString(value))" }
                object += ",\"error\":\(HTTPResponse.jsonString(error)),\"retryable\":\(retryable)"
                if let outcome { object += ",\"outcome\":\(outcome)" }
                objects.append(object + "}")
            }
        }
        return .json(202, "{\"accepted\":\(accepted),\"rejected\":\(results.count - accepted),\"results\":[\(objects.joined(separator: ","))]}")
    }

    private func message(_ messageID: String, _ responder: HTTPResponder) {
        daemon.messageReport(messageID) { result in
            switch result {
            case .failure(let error):
                responder.respond(.error(503, code: "unavailable", message: "the store cannot be read: \(error)", headers: [("Retry-After", "5")]))
            case .success(nil):
                responder.respond(.error(404, code: "not_found", message: "no message with message_id \(messageID) (never accepted, or no longer retained)"))
            case .success(let report?):
                responder.respond(.json(200, Self.messageJSON(report)))
            }
        }
    }

    static func messageJSON(_ report: MessageReport) -> String {
        "{\"message_id\":\(HTTPResponse.jsonString(report.messageID)),\"state\":\"\(report.state)\",\"attempts\":\(report.attempts),"
            + "\"connection\":\(report.connection.map(String.init) ?? "null"),"
            + "\"accepted_at\":\"\(report.acceptedAt)\","
            + "\"last_error\":\(report.lastError.map(HTTPResponse.jsonString) ?? "null"),\"outcome\":\(report.outcome ?? "null")}"
    }

    // MARK: Events

    private func events(_ request: HTTPRequest, _ responder: HTTPResponder) {
        func integer(_ name: String, _ range: ClosedRange<Int64>, default value: Int64?) -> Result<Int64?, RequestError> {
            guard let text = request.query[name] else { return .success(value) }
            guard let number = Int64(text), range.contains(number) else {
                return .failure(.badRequest("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(text)\""))
            }
            return .success(number)
        }
        let after: Int64?, limit: Int64, wait: Int64
        do {
            after = try integer("after", 0...Int64.max, default: nil).get()
            limit = try integer("limit", 1...1000, default: 100).get()!
            wait = try integer("wait", 0...Int64(options.maxWaitSeconds), default: 0).get()!
        } catch {
            responder.respond(error.response)
            return
        }
        if let after {
            read(after: after, limit: Int(limit), wait: Int(wait), responder)
            return
        }
        // From the consumer `api`'s cursor (one acknowledged here and not committed yet counts).
        daemon.journalCursor(of: CCSDaemon.apiConsumer) { [weak self] result in
            guard let self else { return }
            let pending = self.acknowledged[CCSDaemon.apiConsumer] ?? 0
            self.read(after: max((try? result.get()) ?? 0, pending), limit: Int(limit), wait: Int(wait), responder)
        }
    }

    private func read(after: Int64, limit: Int, wait: Int, _ responder: HTTPResponder) {
        daemon.journalEvents(after: after, limit: limit) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                responder.respond(.error(503, code: "unavailable", message: "the events journal cannot be read: \(error)",
                                         headers: [("Retry-After", "5")]))
            case .success(let events) where !events.isEmpty || wait == 0:
                responder.respond(Self.eventsResponse(events.map(\.json), next: events.last?.seq ?? after))
            case .success:
                let waiter = EventWaiter(after: after, limit: limit, responder: responder)
                waiter.timer = self.loop.schedule(after: Double(wait)) { [weak self, weak waiter] in
                    guard let self, let waiter else { return }
                    self.waiters.removeAll { $0 === waiter }
                    self.respondEvents(waiter, events: [], next: after)
                }
                self.waiters.append(waiter)
                // A commit that journaled past `after` while this read was on its way wakes it at once.
                if self.lastJournaledSeq > after { self.wake(waiter) }
            }
        }
    }

    private func journaled(through seq: Int64) {
        lastJournaledSeq = max(lastJournaledSeq, seq)
        for waiter in waiters where waiter.after < seq { wake(waiter) }
    }

    private func wake(_ waiter: EventWaiter) {
        guard !waiter.reading else { return }
        waiter.reading = true
        daemon.journalEvents(after: waiter.after, limit: waiter.limit) { [weak self, weak waiter] result in
            guard let self, let waiter else { return }
            waiter.reading = false
            guard self.waiters.contains(where: { $0 === waiter }) else { return }
            switch result {
            case .success(let events) where events.isEmpty:
                return  // keeps waiting
            case .success(let events):
                self.waiters.removeAll { $0 === waiter }
                self.respondEvents(waiter, events: events.map(\.json), next: events.last!.seq)
            case .failure(let error):
                self.waiters.removeAll { $0 === waiter }
                waiter.timer?.cancel()
                waiter.responder.respond(.error(503, code: "unavailable", message: "the events journal cannot be read: \(error)",
                                                headers: [("Retry-After", "5")]))
            }
        }
    }

    private func respondEvents(_ waiter: EventWaiter, events: [String], next: Int64) {
        waiter.timer?.cancel()
        waiter.responder.respond(Self.eventsResponse(events, next: next))
    }

    static func eventsResponse(_ events: [String], next: Int64) -> HTTPResponse {
        .json(200, "{\"events\":[\(events.joined(separator: ","))],\"next\":\(next)}")
    }

    /// Journal consumers of ccsd itself (the events file, the webhook outlet): the API cannot move their cursors.
    static let reservedConsumers = ["events-file", WebhookOutlet.consumer]

    private func acknowledge(_ request: HTTPRequest, _ responder: HTTPResponder) {
        let value: JSONValue
        do { value = try JSONValue.parse(request.body) } catch {
            responder.respond(.error(400, code: "bad_json", message: "the body is not JSON: \(error)"))
            return
        }
        guard let through = value["through"]?.exactIntegerValue, through >= 0 else {
            responder.respond(.error(400, code: "bad_request", message: "through: must be an integer seq of 0 or more (the last event the consumer has)"))
            return
        }
        var consumer = CCSDaemon.apiConsumer
        if let given = value["consumer"] {
            guard let name = given.stringValue, !name.isEmpty, name.count <= 100, !Self.reservedConsumers.contains(name) else {
                responder.respond(.error(400, code: "bad_request",
                                         message: "consumer: must be a name of 1 to 100 characters (not \(Self.reservedConsumers.joined(separator: " or ")))"))
                return
            }
            consumer = name
        }
        // A cursor past the journal's end would let the store prune events before anyone has read them.
        let last = daemon.lastJournaledSeq
        if through > last {
            if ["idle", "starting"].contains(daemon.snapshot().lifecycle) {
                responder.respond(.error(503, code: "unavailable", message: "ccsd is starting; the journal's end is not known yet",
                                         headers: [("Retry-After", "1")]))
            } else {
                responder.respond(.error(400, code: "bad_request",
                                         message: "through: must be at most the last seq of the journal, \(last) (got \(through))"))
            }
            return
        }
        acknowledged[consumer] = max(acknowledged[consumer] ?? through, through)
        daemon.acknowledgeJournal(consumer: consumer, through: through)
        responder.respond(.json(200, "{\"consumer\":\(HTTPResponse.jsonString(consumer)),\"through\":\(through)}"))
    }
}

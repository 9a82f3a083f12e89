import CCS
import FoundationEssentials
import Store

/// What the HTTP API (`ccsd serve`) asks of the running daemon: submissions answered once durable, one
/// message's state, the events journal and its cursors, and a wake-up when commits journal new events.
/// Everything here runs on the loop.

/// The outcome of one message of an API submission, known once it is durable.
public enum SubmissionResult: Sendable, Equatable {
    /// Its insert (and `accepted` event) committed.
    case accepted(messageID: String)
    /// Rejected; its `rejected` event committed (or, while the store cannot take writes, was not journaled).
    /// `field`, `rule` and `value` as `ValidationError` gives them; `outcome` is the stored final event of a
    /// duplicate of a final message.
    case rejected(messageID: String?, field: String, rule: String, value: String?, error: String, retryable: Bool,
                  outcome: String?)
}

/// Why the daemon takes no submission now (HTTP 503): nothing of the batch was accepted.
public enum SubmissionRefusal: Sendable, Equatable, CustomStringConvertible {
    /// `outstanding` messages are live, at or above `maxQueued`.
    case queueFull(outstanding: Int, maxQueued: Int)
    /// `backlog` events are not acknowledged by the slowest consumer, at or above `maxEventBacklog` (and not
    /// yet back to half of it).
    case eventBacklogFull(backlog: Int64, maxEventBacklog: Int)
    /// The daemon is starting (not yet running), or stopping.
    case notRunning(state: String)
    /// The store cannot take writes.
    case storeUnavailable

    public var description: String {
        switch self {
        case .queueFull(let outstanding, let maxQueued): "the queue is full (\(outstanding) messages outstanding, max_queued \(maxQueued))"
        case .eventBacklogFull(let backlog, let maxEventBacklog):
            "too many events not acknowledged by a consumer (\(backlog) events, max_event_backlog \(maxEventBacklog))"
        case .notRunning(let state): state.hasPrefix("starting") || state == "idle" ? "ccsd is starting" : "ccsd is stopping"
        case .storeUnavailable: "the store cannot take writes right now"
        }
    }
}

/// One live message's state, or what the store kept of it (`GET /v1/messages/{id}`).
public struct MessageReport: Sendable, Equatable {
    public let messageID: String
    /// `persisting`, `queued`, `in_flight`, `waiting_retry`, `finalizing` (live) or `final`; `stored` for a
    /// message the store has as not final that this run does not hold (not expected; reported as it is).
    public let state: String
    /// Times sent (resends after a drain or a lost connection included).
    public let attempts: Int
    public let connection: Int?
    public let acceptedAtUnixMillis: Int64
    public let lastError: String?
    /// The final event's JSON object once final.
    public let outcome: String?

    /// `acceptedAtUnixMillis` in RFC 3339 (UTC, milliseconds).
    public var acceptedAt: String { CCSDaemon.rfc3339(unixMillis: acceptedAtUnixMillis) }
}

/// The API's bookkeeping inside the daemon: a stored property of `CCSDaemon`, used on the loop only.
final class DaemonAPIState {
    final class Ticket {
        var results: [SubmissionResult?]
        var remaining: Int
        var completion: (([SubmissionResult]) -> Void)?
        init(count: Int, completion: @escaping ([SubmissionResult]) -> Void) {
            results = Array(repeating: nil, count: count)
            remaining = count
            self.completion = completion
        }
        func complete(_ index: Int, _ result: SubmissionResult) {
            guard results[index] == nil else { return }
            results[index] = result
            remaining -= 1
            if remaining == 0, let completion {
                self.completion = nil
                completion(results.map { $0! })
            }
        }
    }
    /// Submitted messages whose insert is not committed yet, by message_id.
    var awaitingInsert: [String: (ticket: Ticket, index: Int)] = [:]
    /// Rejections whose record is not committed yet, by record id.
    var awaitingRecord: [UInt64: (ticket: Ticket, index: Int, result: SubmissionResult)] = [:]
    /// The highest seq the journal has committed (the store's at load, then each commit's last).
    var lastJournaledSeq: Int64 = 0
}

extension CCSDaemon {
    /// The journal consumer of the HTTP event feed (`POST /v1/events/ack` without a consumer name).
    public static let apiConsumer = "api"

    /// Submits a batch from the API (items in request order; valid messages carry their message_id, given one
    /// by the caller when the request had none). `completion` is called once, on the loop, with one result
    /// per item in order, when every outcome is durable: accepted after its insert committed, rejected after
    /// its `rejected` event committed (at once while the store cannot take writes). Call on the loop.
    /// - Returns: why nothing was taken (then `completion` is never called), or nil.
    public func submitFromAPI(_ items: [IntakeItem], maxQueued: Int,
                              completion: @escaping ([SubmissionResult]) -> Void) -> SubmissionRefusal? {
        guard case .running = lifecycle.state else {
            return .notRunning(state: "\(lifecycle.state)")
        }
        if storeDown || dispatcher.storeUnavailableReason != nil { return .storeUnavailable }
        if dispatcher.outstanding >= maxQueued { return .queueFull(outstanding: dispatcher.outstanding, maxQueued: maxQueued) }
        if eventBacklogHoldsIntake {
            return .eventBacklogFull(backlog: eventBacklog.count, maxEventBacklog: configuration.maxEventBacklog)
        }
        if items.isEmpty {
            completion([])
            return nil
        }
        let ticket = DaemonAPIState.Ticket(count: items.count, completion: completion)
        let now = now()
        let unixMillis = wallClock()
        var actions: [DispatcherAction] = []
        for (index, item) in items.enumerated() {
            switch item {
            case .message(let message, let line):
                let key = message.targetKey
                let record = MessageRecord(messageID: message.messageID!, json: message.jsonString(), to: key, rateKey: key,
                                           acceptedAt: now, acceptedAtUnixMillis: unixMillis,
                                           timeToLive: message.effectiveTimeToLive)
                // One at a time, so that each action answers this item (a duplicate within the batch included).
                for action in dispatcher.submit([(record, line > 0 ? line : nil)], now: now) {
                    switch action {
                    case .persist(let persisted, _):
                        api.awaitingInsert[persisted.messageID] = (ticket, index)
                    case .record(let request):
                        if let result = Self.rejection(request.event) { api.awaitingRecord[request.id] = (ticket, index, result) }
                    default: break
                    }
                    actions.append(action)
                }
            case .invalid(let line, let messageID, let error):
                logger.warning("message rejected", ["line": "\(line)", "message_id": messageID ?? "", "field": ValidationError.logSafeField(error.field),
                                                    "error": error.logDescription, "retryable": "false", "source": "api"])
                let result = SubmissionResult.rejected(messageID: messageID, field: error.field, rule: error.rule, value: error.value,
                                                       error: error.description, retryable: false, outcome: nil)
                for action in dispatcher.rejectInvalid(messageID: messageID, field: error.field, error: error.description, line: line > 0 ? line : nil) {
                    if case .record(let request) = action {
                        loggedRecords.insert(request.id)
                        api.awaitingRecord[request.id] = (ticket, index, result)
                    }
                    actions.append(action)
                }
            }
        }
        perform(actions)
        return nil
    }

    /// A dispatcher `rejected` event as a submission result (nil for other events).
    static func rejection(_ event: DispatcherEvent) -> SubmissionResult? {
        guard case .rejected(let messageID, let field, let error, _, let retryable, let outcome) = event else { return nil }
        var rule = error
        if !field.isEmpty, rule.hasPrefix(field + ": ") { rule.removeFirst(field.count + 2) }
        let value = field == "message_id" ? messageID.map { HTTPJSON.string($0) } : nil
        return .rejected(messageID: messageID, field: field, rule: rule, value: value, error: error, retryable: retryable,
                         outcome: outcome)
    }

    /// A `.record` is being carried out: a rejection of an API message whose insert was waiting (a duplicate
    /// found by the store, a failed insert) now waits for this record; one written at once (the store is
    /// down) is answered now.
    func apiRecord(_ request: RecordRequest, writtenNow: Bool) {
        // The tag first: most records are not rejections and touch neither map.
        if case .rejected(let messageID?, _, _, _, _, _) = request.event, api.awaitingRecord[request.id] == nil,
           let waiting = api.awaitingInsert.removeValue(forKey: messageID), let result = Self.rejection(request.event) {
            api.awaitingRecord[request.id] = (waiting.ticket, waiting.index, result)
        }
        if writtenNow, let waiting = api.awaitingRecord.removeValue(forKey: request.id) {
            waiting.ticket.complete(waiting.index, waiting.result)
        }
    }

    /// A commit returned (after the dispatcher was told): answers what it made durable and wakes the feed.
    func apiCommitted(_ result: StoreCommitResult) {
        if let last = result.journaled.last { api.lastJournaledSeq = max(api.lastJournaledSeq, last.seq) }
        for persisted in result.persisted where persisted.outcome == .stored && !api.awaitingInsert.isEmpty {
            if let waiting = api.awaitingInsert.removeValue(forKey: persisted.messageID) {
                waiting.ticket.complete(waiting.index, .accepted(messageID: persisted.messageID))
            }
        }
        if let through = result.recordedThrough, !api.awaitingRecord.isEmpty {
            for id in api.awaitingRecord.keys.filter({ $0 <= through }).sorted() {
                let waiting = api.awaitingRecord.removeValue(forKey: id)!
                waiting.ticket.complete(waiting.index, waiting.result)
            }
        }
    }

    /// The message `messageID`: live state from the dispatcher, else what the store kept (final outcome).
    /// `completion` runs on the loop with nil when neither has it.
    public func messageReport(_ messageID: String, completion: @escaping @Sendable (Result<MessageReport?, StoreError>) -> Void) {
        if let status = dispatcher.status(of: messageID) {
            let record = status.record
            completion(.success(MessageReport(messageID: messageID, state: status.state, attempts: record.sends,
                                              connection: status.connection, acceptedAtUnixMillis: record.acceptedAtUnixMillis,
                                              lastError: record.lastError, outcome: nil)))
            return
        }
        writer.read({ store throws(StoreError) in try store.storedMessage(messageID) }) { result in
            completion(result.map { stored in
                stored.map {
                    MessageReport(messageID: $0.messageID, state: $0.finalEvent == nil ? "stored" : "final", attempts: $0.sends,
                                  connection: nil, acceptedAtUnixMillis: $0.acceptedAtUnixMillis, lastError: $0.lastError,
                                  outcome: $0.finalEvent)
                }
            })
        }
    }

    /// Journaled events with `seq > after`, at most `limit`, as event objects (`eventLine` without its newline:
    /// the same objects as the events file). `completion` runs on the loop.
    public func journalEvents(after: Int64, limit: Int,
                              completion: @escaping @Sendable (Result<[(seq: Int64, json: String)], StoreError>) -> Void) {
        writer.read({ store throws(StoreError) in try store.events(after: after, limit: limit) }) { result in
            completion(result.map { events in
                events.map { event in
                    var line = Self.eventLine(event)
                    if line.last == "\n" { line.removeLast() }
                    return (event.seq, line)
                }
            })
        }
    }

    /// The seq `consumer` acknowledged last (nil: never). `completion` runs on the loop.
    public func journalCursor(of consumer: String, completion: @escaping @Sendable (Result<Int64?, StoreError>) -> Void) {
        writer.read({ store throws(StoreError) in try store.cursor(of: consumer) }, completion: completion)
    }

    /// The highest `seq` the events journal has committed (0 before the first event, and before the store is
    /// loaded). A consumer cannot have events past it. Call on the loop.
    public var lastJournaledSeq: Int64 { api.lastJournaledSeq }

    /// Records that `consumer` has every event through `seq` (rides on the next commit; the store may then
    /// prune what every consumer acknowledged), and counts it for `max_event_backlog`. Call on the loop.
    public func acknowledgeJournal(consumer: String, through seq: Int64) {
        writer.acknowledgeEvents(consumer: consumer, through: seq)
        eventConsumerAcknowledged(consumer, through: seq)
    }
}

/// JSON text for the daemon's API answers.
enum HTTPJSON {
    /// `text` as a JSON string literal (RFC 8259 §7), written by `JSONValue.writeString`.
    static func string(_ text: String) -> String {
        var out = ""
        JSONValue.writeString(text, to: &out)
        return out
    }
}

import Dispatch
import Foundation
import TLS

/// What a connection's delegate saw.
enum Event: Sendable, Equatable {
    case ready
    case data([UInt8])
    case drained
    case closed(TLSError?)
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var events: [Event]
    var description: String { "timed out waiting for \(what); events so far: \(events.map(\.brief))" }
}

extension Event {
    var brief: String {
        switch self {
        case .ready: "ready"
        case .data(let bytes): "data(\(bytes.count))"
        case .drained: "drained"
        case .closed(let error): "closed(\(error.map(String.init(describing:)) ?? "nil"))"
        }
    }
}

/// A thread-safe log of events with bounded waits: every wait fails after `timeout` seconds, no polling.
final class EventLog: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `lock`.
    private let lock = NSLock()
    private var events: [Event] = []
    private var waiters: [Int: (predicate: ([Event]) -> Bool, continuation: CheckedContinuation<[Event], Error>)] = [:]
    private var nextID = 0

    func append(_ event: Event) {
        lock.lock()
        events.append(event)
        let snapshot = events
        let satisfied = waiters.filter { $0.value.predicate(snapshot) }
        for id in satisfied.keys { waiters[id] = nil }
        lock.unlock()
        for waiter in satisfied.values { waiter.continuation.resume(returning: snapshot) }
    }

    var snapshot: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }

    /// Waits until `predicate` holds for the events so far; throws `TimedOut` after `timeout` seconds.
    @discardableResult
    func wait(_ what: String, timeout: Double = 10, until predicate: @escaping @Sendable ([Event]) -> Bool) async throws -> [Event] {
        try await withCheckedThrowingContinuation { continuation in
            lock.lock()
            if predicate(events) {
                let snapshot = events
                lock.unlock()
                continuation.resume(returning: snapshot)
                return
            }
            let id = nextID
            nextID += 1
            waiters[id] = (predicate, continuation)
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
                self.lock.lock()
                let waiter = self.waiters.removeValue(forKey: id)
                let snapshot = self.events
                self.lock.unlock()
                waiter?.continuation.resume(throwing: TimedOut(what: what, events: snapshot))
            }
        }
    }

    // MARK: Common waits

    /// Waits for ready or close; returns the close error if it closed first (nil if it became ready).
    func readyOrFailure() async throws -> TLSError? {
        let events = try await wait("ready or closed") { $0.contains(.ready) || $0.contains(where: \.isClose) }
        if events.contains(.ready) { return nil }
        return events.compactMap(\.closeError).first ?? TLSError(.closed, reason: "closed cleanly before ready")
    }

    /// Waits for the close; returns its error (nil = clean).
    func closeError(timeout: Double = 10) async throws -> TLSError? {
        let events = try await wait("close", timeout: timeout) { $0.contains(where: \.isClose) }
        return events.first(where: \.isClose)?.closeError
    }

    /// Waits until at least `count` bytes arrived; returns all bytes received.
    func received(atLeast count: Int, timeout: Double = 10) async throws -> [UInt8] {
        let events = try await wait("\(count) bytes", timeout: timeout) { Self.bytes(in: $0).count >= count }
        return Self.bytes(in: events)
    }

    var receivedBytes: [UInt8] { Self.bytes(in: snapshot) }

    static func bytes(in events: [Event]) -> [UInt8] {
        events.reduce(into: []) { all, event in if case .data(let bytes) = event { all += bytes } }
    }
}

extension Event {
    var isClose: Bool { if case .closed = self { true } else { false } }
    var closeError: TLSError? { if case .closed(let error) = self { error } else { nil } }
}


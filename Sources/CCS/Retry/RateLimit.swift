/// The RATE_EXCEEDED rule (ccs-protocol.md §4) in one place: after a `DEVICE_MESSAGE_RATE_EXCEEDED` or
/// `TOPICS_MESSAGE_RATE_EXCEEDED` nack, every message to that rate key (token, topic or condition) waits
/// until the key's backoff ends; other keys carry on. Each strike in a row lengthens the backoff; an ack
/// for the key clears the strikes.
///
/// Memory follows what is outstanding: a key's bookkeeping goes with its last outstanding message.
struct RateLimit: Sendable {
    private struct Block: Sendable {
        var until: Double
        var waiting: [String] = []
    }

    private var blocked: [String: Block] = [:]
    private var strikes: [String: Int] = [:]
    /// Outstanding (not final) messages per key.
    private var outstanding: [String: Int] = [:]

    /// A message for `key` became outstanding.
    mutating func added(key: String) {
        outstanding[key, default: 0] += 1
    }

    /// A message for `key` became final: the last one takes the key's strikes with it.
    mutating func ended(key: String) {
        // One lookup: the key's place, then its count lowered or its entry removed there.
        if let index = outstanding.index(forKey: key) {
            if outstanding.values[index] > 1 {
                outstanding.values[index] -= 1
                return
            }
            outstanding.remove(at: index)
        }
        if !strikes.isEmpty { strikes[key] = nil }
    }

    /// CCS accepted a message for `key`: its backoff starts over.
    mutating func acked(key: String) {
        guard !strikes.isEmpty else { return }  // the usual case: no lookup
        strikes[key] = nil
    }

    /// A RATE_EXCEEDED nack for `messageID`: blocks `key` (longer with each strike in a row) and parks the
    /// message behind it. Returns when the block ends: schedule `unblock(key:now:)` then.
    mutating func strike(key: String, messageID: String, now: Double, backoff: Backoff, using random: inout SplitMix64) -> Double {
        let count = (strikes[key] ?? 0) + 1
        strikes[key] = count
        let until = now + backoff.delay(attempt: count, using: &random)
        var block = blocked[key] ?? Block(until: until)
        block.until = max(block.until, until)
        block.waiting.append(messageID)
        blocked[key] = block
        return block.until
    }

    /// Parks `messageID` behind its key's block when the key is blocked at `now`; false when it may go.
    mutating func parkIfBlocked(key: String, messageID: String, now: Double) -> Bool {
        guard !blocked.isEmpty else { return false }  // the usual case: no lookup
        guard var block = blocked[key], block.until > now else { return false }
        block.waiting.append(messageID)
        blocked[key] = block
        return true
    }

    /// Ends `key`'s block if it is over at `now`; returns the messages parked behind it (in order), or nil
    /// when the block goes on (a later strike extended it).
    mutating func unblock(key: String, now: Double) -> [String]? {
        guard let block = blocked[key], block.until <= now else { return nil }
        blocked[key] = nil
        return block.waiting
    }

    /// Keys with bookkeeping (for tests of the memory bound).
    var keysTracked: Int { strikes.count + blocked.count + outstanding.count }
}

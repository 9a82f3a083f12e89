/// The RATE_EXCEEDED rule (ccs-protocol.md §4) in one place: after a `DEVICE_MESSAGE_RATE_EXCEEDED` or
/// `TOPICS_MESSAGE_RATE_EXCEEDED` nack, every message to that rate key (token, topic or condition) waits
/// until the key's backoff ends; other keys carry on. Each strike in a row lengthens the backoff; an ack
/// for the key clears the strikes.
///
/// Memory follows what is outstanding: a key's bookkeeping goes with its last outstanding message (or, if
/// later, with the end of its block).
///
/// Each key is hashed once, when a message for it becomes outstanding (`added`): the message carries the
/// returned `Key` (a slot and its generation, like `LiveTable.Handle`), and everything after goes by it.
struct RateLimit: Sendable {
    /// A tracked key's compact handle. It finds nothing once the key's bookkeeping is gone.
    struct Key: Sendable, Equatable {
        let slot: Int32
        let generation: UInt32

        /// No key (a message not outstanding).
        static let none = Key(slot: -1, generation: 0)
    }

    private struct Block: Sendable {
        var until: Double
        var waiting: [LiveTable.Handle] = []
    }

    private struct State: Sendable {
        var key: String
        var hash: UInt32
        /// Outstanding (not final) messages for the key.
        var outstanding = 0
        /// RATE_EXCEEDED nacks in a row.
        var strikes = 0
        var block: Block?
    }

    /// By slot; nil when the slot is free.
    private var states: [State?] = []
    private var generations: [UInt32] = []
    private var freeSlots: [Int32] = []
    private var index = SlotIndex()
    /// Keys with a block (so that the usual case, none, costs no lookup).
    private var blockedKeys = 0

    /// True while `key`'s bookkeeping lasts (a freed slot's generation moved on).
    private func isTracked(_ key: Key) -> Bool {
        key.slot >= 0 && generations[Int(key.slot)] == key.generation
    }

    /// A message for `key` became outstanding; returns the key's handle, for every later call about it.
    mutating func added(key: String) -> Key {
        let hash = SlotIndex.hash(key)
        if let slot = index.find(hash: hash, isKey: { states[Int($0)]!.key == key }) {
            states[Int(slot)]!.outstanding += 1
            return Key(slot: slot, generation: generations[Int(slot)])
        }
        let slot = freeSlots.popLast() ?? Int32(states.count)
        let state = State(key: key, hash: hash, outstanding: 1)
        if Int(slot) == states.count {
            states.append(state)
            generations.append(0)
        } else {
            states[Int(slot)] = state
        }
        index.insert(hash: hash, slot: slot)
        return Key(slot: slot, generation: generations[Int(slot)])
    }

    /// A message for `key` became final: the last one takes the key's strikes with it.
    mutating func ended(_ key: Key) {
        guard isTracked(key) else { return }
        let slot = Int(key.slot)
        if states[slot]!.outstanding > 1 {
            states[slot]!.outstanding -= 1
            return
        }
        states[slot]!.outstanding = 0
        states[slot]!.strikes = 0
        releaseIfIdle(key)
    }

    /// CCS accepted a message for `key`: its backoff starts over.
    mutating func acked(_ key: Key) {
        guard isTracked(key) else { return }
        states[Int(key.slot)]!.strikes = 0
    }

    /// A RATE_EXCEEDED nack for the message `handle` names: blocks `key` (longer with each strike in a row)
    /// and parks the message behind it. Returns when the block ends: schedule `unblock(_:now:)` then.
    /// `key` must be outstanding (the message is).
    mutating func strike(_ key: Key, handle: LiveTable.Handle, now: Double, backoff: Backoff, using random: inout SplitMix64) -> Double {
        precondition(isTracked(key), "strike for a key not tracked")
        let slot = Int(key.slot)
        states[slot]!.strikes += 1
        let until = now + backoff.delay(attempt: states[slot]!.strikes, using: &random)
        if states[slot]!.block == nil {
            states[slot]!.block = Block(until: until)
            blockedKeys += 1
        }
        states[slot]!.block!.until = max(states[slot]!.block!.until, until)
        states[slot]!.block!.waiting.append(handle)
        return states[slot]!.block!.until
    }

    /// Parks the message `handle` names behind its key's block when the key is blocked at `now`; false
    /// when it may go.
    mutating func parkIfBlocked(_ key: Key, handle: LiveTable.Handle, now: Double) -> Bool {
        guard blockedKeys > 0 else { return false }  // the usual case
        guard isTracked(key), let until = states[Int(key.slot)]!.block?.until, until > now else { return false }
        states[Int(key.slot)]!.block!.waiting.append(handle)
        return true
    }

    /// Ends `key`'s block if it is over at `now`; returns the messages parked behind it (in order), or nil
    /// when the block goes on (a later strike extended it) or is already over.
    mutating func unblock(_ key: Key, now: Double) -> [LiveTable.Handle]? {
        guard isTracked(key), let block = states[Int(key.slot)]!.block, block.until <= now else { return nil }
        states[Int(key.slot)]!.block = nil
        blockedKeys -= 1
        releaseIfIdle(key)
        return block.waiting
    }

    /// Frees a key with nothing outstanding and no block.
    private mutating func releaseIfIdle(_ key: Key) {
        let slot = Int(key.slot)
        guard let state = states[slot], state.outstanding == 0, state.block == nil else { return }
        index.remove(hash: state.hash, slot: key.slot)
        states[slot] = nil
        generations[slot] &+= 1
        freeSlots.append(key.slot)
    }

    /// Keys with bookkeeping, counted as separate strike, block and outstanding records (for tests of the
    /// memory bound).
    var keysTracked: Int {
        states.reduce(0) { count, state in
            guard let state else { return count }
            return count + (state.strikes > 0 ? 1 : 0) + (state.block != nil ? 1 : 0) + (state.outstanding > 0 ? 1 : 0)
        }
    }
}

import CCS

/// The SQLite store's live messages as its writer knows them (schema version 3): each one's message_id,
/// accept_seq and accept time, and the lowest accept_seq still live (the live floor).
///
/// - A final is written as a row of its own, keyed by its message's accept_seq (`finals`), so the writer
///   needs the accept_seq of the message a final record names: found here by the record's kept hash, with no
///   query and no text key in SQLite.
/// - The floor is written with each commit (`store_state.live_floor`), and opening the store reads the
///   live messages from it on instead of every retained row.
///
/// Filled by `load` from the live rows it reads, or read from the database before a commit when the store
/// was opened without a load or a commit failed (its changes were rolled back); changed by a commit as it
/// writes. Memory: a `String`, two `Int64`s and a hash per live message, and
/// an accept-order list whose dead entries are dropped once they outnumber the live ones.
struct SQLiteLiveMessages {
    private struct Slot {
        var messageID: String
        var hash: UInt32
        /// -1 while free.
        var acceptSeq: Int64
        /// accepted_at_ms (wall clock, ms since 1970): the pruning walk must know a final whose message's
        /// accept time is after it (the clock stepped back between them).
        var acceptedAt: Int64
    }

    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []
    private var index = SlotIndex()
    /// (accept_seq, slot) in increasing accept_seq from `head` on; an entry is dead once its slot no longer
    /// holds its accept_seq (removed, or freed and reused by a later message).
    private var order: [(acceptSeq: Int64, slot: Int32)] = []
    private var head = 0

    /// Live messages.
    var count: Int { index.count }

    /// The slot, accept_seq and accept time of the live message `messageID`, whose `SlotIndex.hash` is `hash`.
    func find(_ messageID: String, hash: UInt32) -> (slot: Int32, acceptSeq: Int64, acceptedAt: Int64)? {
        slots.withUnsafeBufferPointer { slots in
            index.find(hash: hash) { slots[Int($0)].messageID == messageID }
                .map { ($0, slots[Int($0)].acceptSeq, slots[Int($0)].acceptedAt) }
        }
    }

    /// Adds a live message (not in the set: `find` first). Accept seqs come in increasing order from the
    /// store; one that does not is still placed in order, so the floor stays a lower bound.
    mutating func insert(_ messageID: String, hash: UInt32, acceptSeq: Int64, acceptedAt: Int64) {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            slots[Int(slot)] = Slot(messageID: messageID, hash: hash, acceptSeq: acceptSeq, acceptedAt: acceptedAt)
        } else {
            slot = Int32(slots.count)
            slots.append(Slot(messageID: messageID, hash: hash, acceptSeq: acceptSeq, acceptedAt: acceptedAt))
        }
        index.insert(hash: hash, slot: slot)
        if let last = order.last, head < order.count, last.acceptSeq > acceptSeq {
            let position = order[head...].partitioningIndex { $0.acceptSeq > acceptSeq }
            order.insert((acceptSeq, slot), at: position)
        } else {
            order.append((acceptSeq, slot))
        }
    }

    /// Removes the live message in `slot` (as `find` gave it).
    mutating func remove(slot: Int32) {
        let hash = slots[Int(slot)].hash
        index.remove(hash: hash, slot: slot)
        slots[Int(slot)].acceptSeq = -1
        slots[Int(slot)].messageID = ""
        freeSlots.append(slot)
    }

    /// The lowest live accept_seq, or `next` (the next accept_seq the store could give) when none is live.
    /// Drops the dead entries at the front of the accept order, and compacts it when dead entries
    /// outnumber live ones (a message live for long holds the front).
    mutating func floor(next: Int64) -> Int64 {
        while head < order.count, slots[Int(order[head].slot)].acceptSeq != order[head].acceptSeq { head += 1 }
        if head == order.count {
            order.removeAll(keepingCapacity: order.count <= 4096)
            head = 0
            return next
        }
        if order.count - head > 2 * count + 64 {
            order = order[head...].filter { slots[Int($0.slot)].acceptSeq == $0.acceptSeq }
            head = 0
        } else if head > 4096, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        return order[head].acceptSeq
    }

    /// Forgets every message (before a rebuild).
    mutating func removeAll() {
        self = SQLiteLiveMessages()
    }
}

extension Collection {
    /// The first index whose element satisfies `belongs`, for a collection partitioned so that every
    /// element that does follows every element that does not (a binary search). Used by `SQLiteLiveMessages`
    /// and `SQLiteFinalsPruning` to place an entry in their sorted lists.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Index {
        var low = startIndex
        var length = count
        while length > 0 {
            let half = length / 2
            let middle = index(low, offsetBy: half)
            if belongs(self[middle]) {
                length = half
            } else {
                low = index(after: middle)
                length -= half + 1
            }
        }
        return low
    }
}

/// An index from message_id to a small integer (a slot, or a position) that its owner keeps next to the id,
/// for the per-message tables of the store path (the memory store's messages, a batch's pending progress).
///
/// Why not `[String: Int]`: the caller hashes the id once (`MessageIDIndex.hash(_:)`, Swift's seeded
/// `Hasher`, so a chosen set of ids cannot pile up in one place) and can hand that hash on (a batch's
/// progress hash is reused by the memory store's commit), and an entry is removed by its value and its
/// stored hash, with no second hash and no comparison of ids (the memory store's pruning). A `Dictionary`
/// hashes the key again on every lookup and removal.
///
/// Open addressing with linear probing, at most half full; removal shifts the rest of the run back (no
/// tombstones). Each bucket is one word: the low 32 bits of the hash (its home and a tag) in the upper half,
/// the value + 1 in the lower half (0: empty). Values are below `UInt32.max`.
struct MessageIDIndex {
    private var buckets: [UInt64]
    private(set) var count = 0

    /// An empty index with room for `minimumCapacity` entries before it grows (none: no storage yet).
    init(minimumCapacity: Int = 0) {
        guard minimumCapacity > 0 else {
            buckets = []
            return
        }
        var capacity = 16
        while capacity < minimumCapacity * 2 { capacity *= 2 }
        buckets = Array(repeating: 0, count: capacity)
    }

    /// The hash this index files `id` under: the low 32 bits of `id.hashValue` (seeded per process, the same
    /// on every thread).
    @inline(__always)
    static func hash(_ id: String) -> UInt32 { UInt32(truncatingIfNeeded: id.hashValue) }

    /// The first value filed under `hash` for which `matches` (the owner comparing its id with the one looked
    /// for) is true, or nil.
    @inline(__always)
    func value(hash: UInt32, where matches: (Int) -> Bool) -> Int? {
        if count == 0 { return nil }
        let tag = UInt64(hash) << 32
        return buckets.withUnsafeBufferPointer { buckets in
            let mask = buckets.count - 1
            var position = Int(hash) & mask
            while true {
                let bucket = buckets[position]
                if bucket == 0 { return nil }
                if bucket & 0xFFFF_FFFF_0000_0000 == tag {
                    let value = Int(truncatingIfNeeded: bucket & 0xFFFF_FFFF) - 1
                    if matches(value) { return value }
                }
                position = (position + 1) & mask
            }
        }
    }

    /// Files `value` under `hash`. The caller knows the id is not filed yet.
    mutating func insert(hash: UInt32, value: Int) {
        precondition(value >= 0 && value < Int(UInt32.max), "MessageIDIndex: value out of range")
        if (count + 1) * 2 > buckets.count { grow() }
        Self.place(UInt64(hash) << 32 | UInt64(value + 1), in: &buckets)
        count += 1
    }

    /// Removes `value`, filed under `hash` (it must be filed).
    mutating func remove(hash: UInt32, value: Int) {
        let wanted = UInt64(value + 1)
        buckets.withUnsafeMutableBufferPointer { buckets in
            let mask = buckets.count - 1
            var hole = Int(hash) & mask
            while buckets[hole] & 0xFFFF_FFFF != wanted {
                precondition(buckets[hole] != 0, "MessageIDIndex: removing a value that is not filed")
                hole = (hole + 1) & mask
            }
            // Backward shift: an entry later in the run moves into the hole when the hole lies between its
            // home and where it sits, so every entry stays reachable from its home without tombstones.
            var next = hole
            while true {
                next = (next + 1) & mask
                let bucket = buckets[next]
                if bucket == 0 { break }
                let home = Int(truncatingIfNeeded: bucket >> 32) & mask
                if (next - home) & mask >= (next - hole) & mask {
                    buckets[hole] = bucket
                    hole = next
                }
            }
            buckets[hole] = 0
        }
        count -= 1
    }

    private mutating func grow() {
        precondition(buckets.count < 1 << 32, "MessageIDIndex: too many entries")
        var larger = [UInt64](repeating: 0, count: max(16, buckets.count * 2))
        for bucket in buckets where bucket != 0 { Self.place(bucket, in: &larger) }
        buckets = larger
    }

    @inline(__always)
    private static func place(_ bucket: UInt64, in buckets: inout [UInt64]) {
        buckets.withUnsafeMutableBufferPointer { buckets in
            let mask = buckets.count - 1
            var position = Int(truncatingIfNeeded: bucket >> 32) & mask
            while buckets[position] != 0 { position = (position + 1) & mask }
            buckets[position] = bucket
        }
    }
}

/// An index from a `String` key to the slot that holds it in its owner's table (the live table's
/// message_ids, the rate limit's keys): open addressing with linear probing over buckets of a 32-bit hash
/// and a slot, 8 bytes each.
///
/// The owner hashes a key once, with `hash(_:)`, and keeps that hash with the slot: a lookup compares
/// hashes first and asks the owner (`isKey`) only about slots whose hash is equal; a removal finds its
/// bucket by the kept hash and the slot, and so hashes nothing and compares no text. This is what a
/// `[String: Int32]` cannot do: its removal hashes the key again. The hash is Swift's seeded `hashValue`,
/// so keys a peer or an app chooses cannot be made to collide on purpose. Equal keys (`==`, canonical
/// equivalence) hash equally, as for a `Dictionary`.
///
/// Buckets grow (doubling) past three quarters full and never shrink, like a `Dictionary`'s; a removal
/// shifts the rest of its probe run back (no tombstones), so lookups stay short however keys come and go.
struct SlotIndex: Sendable {
    private struct Bucket: Sendable {
        var hash: UInt32
        /// The owner's slot; -1 when the bucket is empty.
        var slot: Int32
    }

    private static let empty = Bucket(hash: 0, slot: -1)
    private var buckets: [Bucket] = []
    /// Keys in the index.
    private(set) var count = 0

    /// The hash a key is kept and found by: 32 bits of its seeded `hashValue`.
    static func hash(_ key: String) -> UInt32 { UInt32(truncatingIfNeeded: key.hashValue) }

    /// The slot of the key whose hash is `hash` and for whose slot `isKey` holds; nil when there is none.
    func find(hash: UInt32, isKey: (Int32) -> Bool) -> Int32? {
        guard count > 0 else { return nil }
        let mask = buckets.count - 1
        var index = Int(hash) & mask
        while true {
            let bucket = buckets[index]
            if bucket.slot < 0 { return nil }
            if bucket.hash == hash, isKey(bucket.slot) { return bucket.slot }
            index = (index + 1) & mask
        }
    }

    /// Adds `slot` under `hash`. The key must not be in the index (`find` first).
    mutating func insert(hash: UInt32, slot: Int32) {
        precondition(slot >= 0, "negative slot")
        if (count + 1) * 4 > buckets.count * 3 { grow() }
        place(Bucket(hash: hash, slot: slot))
        count += 1
    }

    /// Removes `slot`, which was inserted under `hash`.
    mutating func remove(hash: UInt32, slot: Int32) {
        let mask = buckets.count - 1
        var hole = Int(hash) & mask
        while buckets[hole].slot != slot {
            precondition(buckets[hole].slot >= 0, "slot \(slot) not in the index")
            hole = (hole + 1) & mask
        }
        // Backward shift: each later bucket of the run moves into the hole unless its home lies after the hole.
        var next = hole
        while true {
            next = (next + 1) & mask
            let bucket = buckets[next]
            if bucket.slot < 0 { break }
            let home = Int(bucket.hash) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = bucket
                hole = next
            }
        }
        buckets[hole] = Self.empty
        count -= 1
    }

    private mutating func place(_ bucket: Bucket) {
        let mask = buckets.count - 1
        var index = Int(bucket.hash) & mask
        while buckets[index].slot >= 0 { index = (index + 1) & mask }
        buckets[index] = bucket
    }

    private mutating func grow() {
        let old = buckets
        buckets = Array(repeating: Self.empty, count: max(16, old.count * 2))
        for bucket in old where bucket.slot >= 0 { place(bucket) }
    }
}

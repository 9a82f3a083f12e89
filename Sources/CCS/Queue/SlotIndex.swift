/// An index from a `String` key (a message_id, a registration token) to the slot that holds it in its
/// owner's table: the live table, the rate limit's keys, the memory store's messages, a store batch's
/// pending progress.
///
/// Why not `[String: Int32]`: the owner hashes a key once (`SlotIndex.hash(_:)`) and keeps that hash with
/// the slot, or hands it on (a store batch's progress hash is reused by the memory store's commit). A lookup
/// compares hashes first and asks the owner (`isKey`) only about slots whose hash is equal; a removal finds
/// its bucket by the kept hash and the slot, so it hashes nothing and compares no text. A `Dictionary`
/// hashes the key again on every lookup and removal. The hash is Swift's seeded `hashValue`, so keys a peer
/// or an app chooses cannot be made to collide on purpose; equal keys (`==`, canonical equivalence) hash
/// equally, as for a `Dictionary`.
///
/// Open addressing with linear probing, at most half full; buckets grow (doubling) and never shrink; a
/// removal shifts the rest of its probe run back (no tombstones), so lookups stay short however keys come
/// and go. Each bucket is one word: the 32-bit hash (its home and a tag) in the upper half, the slot + 1 in
/// the lower half (0: empty).
public struct SlotIndex: Sendable {
    private var buckets: [UInt64]
    /// Keys in the index.
    public private(set) var count = 0

    /// An empty index with room for `minimumCapacity` keys before it grows (0: no storage yet).
    public init(minimumCapacity: Int = 0) {
        guard minimumCapacity > 0 else {
            buckets = []
            return
        }
        var capacity = 16
        while capacity < minimumCapacity * 2 { capacity *= 2 }
        buckets = Array(repeating: 0, count: capacity)
    }

    /// The hash a key is kept and found by: the low 32 bits of its seeded `hashValue` (seeded per process,
    /// the same on every thread).
    @inline(__always)
    public static func hash(_ key: String) -> UInt32 { UInt32(truncatingIfNeeded: key.hashValue) }

    /// The slot of the key whose hash is `hash` and for whose slot `isKey` holds; nil when there is none.
    @inline(__always)
    public func find(hash: UInt32, isKey: (Int32) -> Bool) -> Int32? {
        if count == 0 { return nil }
        let tag = UInt64(hash) << 32
        return buckets.withUnsafeBufferPointer { buckets in
            let mask = buckets.count - 1
            var position = Int(hash) & mask
            while true {
                let bucket = buckets[position]
                if bucket == 0 { return nil }
                if bucket & 0xFFFF_FFFF_0000_0000 == tag {
                    let slot = Int32(truncatingIfNeeded: bucket & 0xFFFF_FFFF) - 1
                    if isKey(slot) { return slot }
                }
                position = (position + 1) & mask
            }
        }
    }

    /// Adds `slot` (0 or more) under `hash`. The key must not be in the index (`find` first).
    public mutating func insert(hash: UInt32, slot: Int32) {
        precondition(slot >= 0, "SlotIndex: negative slot")
        if (count + 1) * 2 > buckets.count { grow() }
        Self.place(UInt64(hash) << 32 | UInt64(slot + 1), in: &buckets)
        count += 1
    }

    /// Removes `slot`, which was inserted under `hash`.
    public mutating func remove(hash: UInt32, slot: Int32) {
        let wanted = UInt64(slot + 1)
        buckets.withUnsafeMutableBufferPointer { buckets in
            let mask = buckets.count - 1
            var hole = Int(hash) & mask
            while buckets[hole] & 0xFFFF_FFFF != wanted {
                precondition(buckets[hole] != 0, "SlotIndex: removing slot \(slot), which is not in the index")
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
                if (next &- home) & mask >= (next &- hole) & mask {
                    buckets[hole] = bucket
                    hole = next
                }
            }
            buckets[hole] = 0
        }
        count -= 1
    }

    private mutating func grow() {
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

/// Every downstream message_id the emulator has seen in this run, with its entry (attempts, target, ack):
/// a `[String: Seen]` split in 256 by the key's hash, so that it never rehashes all its entries at once.
///
/// It grows for the whole run (duplicates are detected across connections and restarts of the client). One
/// dictionary doubles its storage at every power of two and rehashes every key then: measured at about 26 ms
/// of CPU at 98,304 entries and 57 ms at 196,608, a pause in which no ack is written, which showed in the
/// benchmark's accept-to-ack p99. Split in 256, each doubling moves about 1/256 of the entries (~0.1 ms at
/// 100,000 messages); the work in all is the same. A lookup costs one more `String` hash (to pick the part).
struct SeenMessages {
    typealias Seen = CCSEmulator.Seen
    private static let shardBits = 8
    private var shards = [[String: Seen]](repeating: [:], count: 1 << shardBits)

    /// The part that holds `key`: the top bits of its hash (the part's own table uses its own seed).
    @inline(__always)
    private static func shard(_ key: String) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: key.hashValue) >> UInt(UInt.bitWidth - shardBits))
    }

    /// As `Dictionary.subscript(_:)`: the entry of `key`, or nil; set nil to remove it. Updated in place.
    subscript(key: String) -> Seen? {
        get { shards[Self.shard(key)][key] }
        _modify { yield &shards[Self.shard(key)][key] }
    }

    /// As `Dictionary.subscript(_:default:)`: `defaultValue` is evaluated (and inserted) only when `key` is absent.
    subscript(key: String, default defaultValue: @autoclosure () -> Seen) -> Seen {
        get { shards[Self.shard(key)][key, default: defaultValue()] }
        _modify { yield &shards[Self.shard(key)][key, default: defaultValue()] }
    }

    /// Entries in all.
    var count: Int { shards.reduce(0) { $0 + $1.count } }

    /// Every message_id (in no particular order).
    var keys: [String] { shards.flatMap { $0.keys } }

    /// The message_ids whose entry satisfies `isIncluded` (in no particular order).
    func keys(where isIncluded: (Seen) -> Bool) -> [String] {
        shards.flatMap { shard in shard.compactMap { isIncluded($0.value) ? $0.key : nil } }
    }
}

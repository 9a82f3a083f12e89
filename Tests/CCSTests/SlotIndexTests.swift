import Testing
@testable import CCS

/// `SlotIndex` against a `Dictionary` doing the same: lookups, insertions and removals (backward shift)
/// with hashes chosen to collide, runs that wrap around the end of the table, and growth.
@Suite struct SlotIndexTests {
    /// Keys `0..<keyCount` filed as slots; key k is filed under `hashOf(k)`.
    private struct Model {
        var index = SlotIndex()
        var filed: [Int: UInt32] = [:]  // key -> hash

        mutating func insert(_ key: Int, hash: UInt32) {
            index.insert(hash: hash, slot: Int32(key))
            filed[key] = hash
        }

        mutating func remove(_ key: Int) {
            index.remove(hash: filed[key]!, slot: Int32(key))
            filed[key] = nil
        }

        func find(_ key: Int, hash: UInt32) -> Int? { index.find(hash: hash) { Int($0) == key }.map(Int.init) }

        /// Every key filed is found under its hash, no other is, and the count agrees.
        func check(keys: Range<Int>, hashOf: (Int) -> UInt32) {
            #expect(index.count == filed.count)
            for key in keys {
                let found = find(key, hash: hashOf(key))
                #expect(found == (filed[key] == nil ? nil : key), "key \(key)")
            }
        }
    }

    /// How test keys are hashed: collisions of every kind.
    enum Hashing: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case fewHashes, oneHash, nearTheEnd, sameTagOtherHomes, spread

        var testDescription: String { rawValue }

        func hash(_ key: Int) -> UInt32 {
            switch self {
            case .fewHashes: UInt32(key % 3)
            case .oneHash: 7
            case .nearTheEnd: UInt32.max - UInt32(key % 5)  // runs wrap around the end of the table
            case .sameTagOtherHomes: UInt32(key)
            case .spread: UInt32(truncatingIfNeeded: key &* 0x9E37_79B9)
            }
        }
    }

    @Test(arguments: Hashing.allCases)
    func agreesWithADictionaryUnderRandomInsertsAndRemovals(hashing: Hashing) {
        let hashOf = hashing.hash
        var random = SplitMix64(seed: 42)
        var model = Model()
        let keys = 0..<300
        for step in 0..<3_000 {
            let key = Int.random(in: keys, using: &random)
            if model.filed[key] == nil {
                model.insert(key, hash: hashOf(key))
            } else {
                model.remove(key)
            }
            if step % 97 == 0 { model.check(keys: keys, hashOf: hashOf) }
        }
        model.check(keys: keys, hashOf: hashOf)
        for key in keys where model.filed[key] != nil { model.remove(key) }
        model.check(keys: keys, hashOf: hashOf)
        #expect(model.index.count == 0)
    }

    @Test func growsAndKeepsEverythingFindable() {
        var model = Model()
        let hashOf = { (key: Int) -> UInt32 in SlotIndex.hash("m-\(key)") }
        for key in 0..<5_000 { model.insert(key, hash: hashOf(key)) }
        model.check(keys: 0..<5_001, hashOf: hashOf)
        for key in stride(from: 0, to: 5_000, by: 2) { model.remove(key) }
        model.check(keys: 0..<5_000, hashOf: hashOf)
    }

    @Test func anEmptyIndexFindsNothing() {
        #expect(SlotIndex().find(hash: 0) { _ in true } == nil)
        #expect(SlotIndex(minimumCapacity: 10).find(hash: 0) { _ in true } == nil)
    }

    /// Random inserts and removals against a `[key: slot]` dictionary, with hashes from a small range so that
    /// runs collide, wrap around the end of the buckets and are cut by removals in their middle.
    @Test(arguments: [1, 7, 1 << 20, 1 << 32 - 1])
    func slotIndexAgreesWithADictionary(hashRange: Int) {
        var random = SplitMix64(seed: UInt64(hashRange))
        var index = SlotIndex()
        var reference: [String: Int32] = [:]
        var hashOf: [String: UInt32] = [:]
        var keyOfSlot: [Int32: String] = [:]
        var nextSlot: Int32 = 0
        for step in 0..<10_000 {
            let key = "k-\(random.next() % 200)"
            let hash = UInt32(random.next() % UInt64(hashRange))
            let found = index.find(hash: hashOf[key] ?? hash) { keyOfSlot[$0] == key }
            #expect(found == reference[key], "step \(step): \(key)")
            if let slot = reference[key] {
                if random.next() % 3 != 0 {
                    index.remove(hash: hashOf[key]!, slot: slot)
                    reference[key] = nil
                    hashOf[key] = nil
                    keyOfSlot[slot] = nil
                }
            } else {
                index.insert(hash: hash, slot: nextSlot)
                reference[key] = nextSlot
                hashOf[key] = hash
                keyOfSlot[nextSlot] = key
                nextSlot += 1
            }
            #expect(index.count == reference.count)
        }
        for (key, slot) in reference { #expect(index.find(hash: hashOf[key]!) { keyOfSlot[$0] == key } == slot) }
    }

    @Test func slotIndexFindsEqualStringsByTheirSeededHash() {
        // Canonically equivalent strings are equal keys, as in a Dictionary.
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(SlotIndex.hash(composed) == SlotIndex.hash(decomposed))
        var index = SlotIndex()
        index.insert(hash: SlotIndex.hash(composed), slot: 0)
        #expect(index.find(hash: SlotIndex.hash(decomposed)) { _ in composed == decomposed } == 0)
    }
}

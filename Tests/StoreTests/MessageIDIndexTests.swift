import CCS
import Testing
@testable import Store

/// `MessageIDIndex` against a `Dictionary` doing the same: lookups, insertions and removals (backward
/// shift) with hashes chosen to collide, runs that wrap around the end of the table, and growth.
@Suite struct MessageIDIndexTests {
    /// Keys `0..<keyCount` filed as values; key k is filed under `hashOf(k)`.
    private struct Model {
        var index = MessageIDIndex()
        var filed: [Int: UInt32] = [:]  // key -> hash

        mutating func insert(_ key: Int, hash: UInt32) {
            index.insert(hash: hash, value: key)
            filed[key] = hash
        }

        mutating func remove(_ key: Int) {
            index.remove(hash: filed[key]!, value: key)
            filed[key] = nil
        }

        func find(_ key: Int, hash: UInt32) -> Int? { index.value(hash: hash) { $0 == key } }

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
        let hashOf = { (key: Int) -> UInt32 in MessageIDIndex.hash("m-\(key)") }
        for key in 0..<5_000 { model.insert(key, hash: hashOf(key)) }
        model.check(keys: 0..<5_001, hashOf: hashOf)
        for key in stride(from: 0, to: 5_000, by: 2) { model.remove(key) }
        model.check(keys: 0..<5_000, hashOf: hashOf)
    }

    @Test func anEmptyIndexFindsNothing() {
        #expect(MessageIDIndex().value(hash: 0) { _ in true } == nil)
        #expect(MessageIDIndex(minimumCapacity: 10).value(hash: 0) { _ in true } == nil)
    }
}

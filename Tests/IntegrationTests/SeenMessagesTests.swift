import CCS
@testable import CCSEmulator
import Testing

/// The emulator's table of seen message_ids (split in parts so it never rehashes all at once) answers as
/// one `Dictionary` would, over a long mixed sequence of operations.
@Suite struct SeenMessagesTests {
    typealias Seen = CCSEmulator.Seen

    @Test func answersAsOneDictionary() {
        var split = SeenMessages()
        var plain: [String: Seen] = [:]
        var random = SplitMix64(seed: 7)
        func same(_ key: String) -> Bool {
            split[key]?.attempts == plain[key]?.attempts && split[key]?.target == plain[key]?.target
                && split[key]?.ack == plain[key]?.ack
        }
        for step in 0..<60_000 {
            let key = "m-\(random.next() % 20_000)"
            switch random.next() % 5 {
            case 0, 1:
                // The `default:` form: its default is made only for a new key.
                var madeSplit = false, madePlain = false
                split[key, default: { madeSplit = true; return Seen(attempts: 0, target: "t\(step)", ack: nil) }()].attempts += 1
                plain[key, default: { madePlain = true; return Seen(attempts: 0, target: "t\(step)", ack: nil) }()].attempts += 1
                #expect(madeSplit == madePlain)
            case 2:
                split[key]?.ack = AckMark(connection: step % 3, at: UInt64(step))
                plain[key]?.ack = AckMark(connection: step % 3, at: UInt64(step))
            case 3:
                let entry = Seen(attempts: step, target: nil, ack: nil)
                split[key] = entry
                plain[key] = entry
            default:
                split[key] = nil
                plain[key] = nil
            }
            #expect(same(key))
        }
        #expect(split.count == plain.count)
        #expect(split.keys.sorted() == plain.keys.sorted())
        #expect(split.keys(where: \.acked).sorted() == plain.filter { $0.value.acked }.keys.sorted())
        #expect(plain.keys.allSatisfy(same))
    }
}

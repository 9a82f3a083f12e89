import Foundation
import FuzzTargets
import Testing

/// Every input of every fuzz target's seed corpus (`Tests/Fuzz/Corpus/<target>/`), crashes found by the
/// fuzzer included, through the target itself: the invariants the fuzzer checks hold for each of them.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    static let corpusRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    static func inputs(_ target: FuzzTarget) throws -> [(name: String, bytes: [UInt8])] {
        let directory = corpusRoot.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        return try names.map { name in
            (name, [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func corpusKeepsEveryInvariant(target: FuzzTarget) throws {
        let inputs = try Self.inputs(target)
        #expect(inputs.count >= 5, "the \(target.rawValue) corpus is missing or nearly empty")
        for input in inputs {
            let violations = target.run(input.bytes)
            #expect(violations.isEmpty, "\(target.rawValue)/\(input.name): \(violations.joined(separator: "\n"))")
        }
    }
}

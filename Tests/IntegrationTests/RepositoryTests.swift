import CorpusFixtures
import Foundation
import Testing

/// The repository stands alone: a clean clone with nothing beside it builds, runs its demo and passes its
/// tests, so nothing in it may refer to files outside it.
@Suite struct RepositoryTests {
    /// The repository root, from this source file (Tests/IntegrationTests/ → root).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().standardizedFileURL

    /// `scripts/check-standalone` finds no path outside the repository, no citation of a `ccs-protocol.md`
    /// section that `docs/ccs-protocol.md` lacks, and no doc naming a missing file. Bounded: killed after 60 s.
    @Test func treeRefersToNothingOutsideTheRepository() throws {
        let result = try CommandLineTests.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.root.appendingPathComponent("scripts/check-standalone").path],
            environment: nil, timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    /// The corpus the tests and the demo use is inside the repository.
    @Test func corpusLivesInTheRepository() throws {
        #expect(DownstreamCorpus.url.path.hasPrefix(Self.root.path + "/Tests/"))
        #expect(DownstreamCorpus.cases.count >= 30)
    }
}

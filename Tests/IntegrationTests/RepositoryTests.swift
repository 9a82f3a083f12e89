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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.root.appendingPathComponent("scripts/check-standalone").path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(output)")
    }

    /// The corpus the tests and the demo use is inside the repository.
    @Test func corpusLivesInTheRepository() throws {
        #expect(DownstreamCorpus.url.path.hasPrefix(Self.root.path + "/Tests/"))
        #expect(DownstreamCorpus.cases.count >= 30)
    }
}

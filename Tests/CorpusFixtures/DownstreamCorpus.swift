import CCS
import Foundation

/// One line of Tests/Corpus/downstream.jsonl (see its README): an intake line and what validation must say.
public struct CorpusCase: Sendable, CustomStringConvertible {
    public let number: Int
    public let name: String
    /// The intake line: the `message` object as JSON text, or the `raw` text.
    public let line: String
    public let valid: Bool
    public let field: String?
    public let rule: String?

    public var description: String { "line \(number): \(name)" }
}

public enum DownstreamCorpus {
    /// `Tests/Corpus/downstream.jsonl`, found from this source file (Tests/CorpusFixtures/ → Tests/).
    public static let url: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpus/downstream.jsonl").standardizedFileURL

    /// The cases, or the reason they could not be read.
    public static let loaded: Result<[CorpusCase], CorpusError> = load()

    /// The cases for parameterized tests; empty when the file is missing (then `corpusIsReadable` fails).
    public static var cases: [CorpusCase] { (try? loaded.get()) ?? [] }

    public struct CorpusError: Error, CustomStringConvertible { public var description: String }

    static func load() -> Result<[CorpusCase], CorpusError> {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            return .failure(CorpusError(description: "cannot read the downstream corpus at \(url.path)"))
        }
        var cases: [CorpusCase] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            guard case .object(let entry)? = try? JSONValue.parse(String(line)),
                  let name = entry["name"]?.stringValue, let expect = entry["expect"]?.objectValue,
                  let valid = expect["valid"]?.boolValue else {
                return .failure(CorpusError(description: "corpus line \(index + 1) is not a {name, message|raw, expect} object"))
            }
            let intake: String
            if let message = entry["message"] {
                intake = message.serialized()
            } else if let raw = entry["raw"]?.stringValue {
                intake = raw
            } else {
                return .failure(CorpusError(description: "corpus line \(index + 1) has neither message nor raw"))
            }
            cases.append(CorpusCase(
                number: index + 1, name: name, line: intake, valid: valid,
                field: expect["field"]?.stringValue, rule: expect["rule"]?.stringValue))
        }
        return .success(cases)
    }
}

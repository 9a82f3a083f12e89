import CCS
import Foundation
import Testing

/// One line of ../shared/corpus/downstream.jsonl (see its README): an intake line and what validation must say.
struct CorpusCase: Sendable, CustomTestStringConvertible {
    var number: Int
    var name: String
    /// The intake line: the `message` object as JSON text, or the `raw` text.
    var line: String
    var valid: Bool
    var field: String?
    var rule: String?

    var testDescription: String { "line \(number): \(name)" }
}

enum DownstreamCorpus {
    /// `<repo>/../shared/corpus/downstream.jsonl`, found from this source file (Tests/CCSTests/ → repo root).
    static let url: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/corpus/downstream.jsonl").standardizedFileURL

    /// The cases, or the reason they could not be read.
    static let loaded: Result<[CorpusCase], CorpusError> = load()

    /// The cases for parameterized tests; empty when the file is missing (then `corpusIsReadable` fails).
    static var cases: [CorpusCase] { (try? loaded.get()) ?? [] }

    struct CorpusError: Error, CustomStringConvertible { var description: String }

    static func load() -> Result<[CorpusCase], CorpusError> {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            return .failure(CorpusError(description: "cannot read the downstream corpus at \(url.path): the repository must be cloned with shared/ as a sibling directory"))
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

@Suite("Downstream corpus")
struct DownstreamCorpusTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func corpusIsReadable() throws {
        switch DownstreamCorpus.loaded {
        case .success(let cases):
            #expect(!cases.isEmpty, "the downstream corpus at \(DownstreamCorpus.url.path) is empty")
            #expect(cases.contains { $0.valid } && cases.contains { !$0.valid })
        case .failure(let error):
            Issue.record("\(error)")
        }
    }

    @Test(arguments: DownstreamCorpus.cases)
    func corpusLine(_ entry: CorpusCase) throws {
        let result = DownstreamIntake.parse(line: entry.line, now: Self.now)
        if entry.valid {
            let message = try result.get()
            // Valid lines also survive the round trip through the model's own JSON.
            let again = try DownstreamIntake.parse(line: message.jsonString(), now: Self.now).get()
            #expect(again == message)
        } else {
            guard case .failure(let error) = result else {
                Issue.record("expected a rejection on \(entry.field ?? "?") (\(entry.rule ?? "")), but the line was accepted")
                return
            }
            #expect(error.field == entry.field, "\(error)")
            #expect(!error.rule.isEmpty)
            // Error values never carry a long payload.
            #expect((error.value?.count ?? 0) <= ValidationError.maximumValueLength)
        }
    }

    @Test func explicitZeroTimeToLiveIsKept() throws {
        let line = DownstreamCorpus.cases.first { $0.name == "time_to_live zero" }
        let entry = try #require(line, "corpus case 'time_to_live zero' is missing")
        let message = try DownstreamIntake.parse(line: entry.line, now: Self.now).get()
        #expect(message.timeToLive == 0)
        #expect(message.effectiveTimeToLive == 0)
        #expect(message.jsonString().contains("\"time_to_live\":0"))
        #expect(message.jsonValue()["time_to_live"] == .int(0))
    }

    @Test func payloadLimitsAreMeasuredAsDocumented() throws {
        let under = try #require(DownstreamCorpus.cases.first { $0.name == "data payload just under 4096 bytes" })
        let message = try DownstreamIntake.parse(line: under.line, now: Self.now).get()
        #expect(message.payloadByteCount <= 4096)
        #expect(message.payloadByteCount > 4000)
        let over = try #require(DownstreamCorpus.cases.first { $0.name == "payload over 4096 bytes" })
        guard case .failure(let error) = DownstreamIntake.parse(line: over.line, now: Self.now) else {
            Issue.record("over-limit payload accepted"); return
        }
        #expect(error.code == .payloadSize)
        #expect(error.description.hasPrefix("data: data + notification must be at most 4096 bytes"))
    }
}

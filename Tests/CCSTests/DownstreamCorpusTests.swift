import CCS
import CorpusFixtures
import Foundation
import Testing

extension CorpusCase: CustomTestStringConvertible {
    public var testDescription: String { description }
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

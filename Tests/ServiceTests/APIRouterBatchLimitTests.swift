import Foundation
import Testing
@testable import Service
import HTTPServer

/// One `POST /v1/messages` holds at most `maxBatchMessages` messages: validating and submitting a batch runs
/// on the event loop, so a body of many small messages must not hold it for seconds.
@Suite struct APIRouterBatchLimitTests {
    static func body(_ count: Int, lines: Bool) -> Data {
        let messages = (0..<count).map { #"{"to":"t","message_id":"m-\#($0)"}"# }
        return Data((lines ? messages.joined(separator: "\n") : "[" + messages.joined(separator: ",") + "]").utf8)
    }

    @Test(arguments: [false, true]) func aBatchOverTheLimitIsRefusedWhole(lines: Bool) throws {
        #expect(try APIRouter.split(Self.body(10, lines: lines), jsonLines: lines, maxMessages: 10).get().count == 10)
        guard case .failure(let error) = APIRouter.split(Self.body(11, lines: lines), jsonLines: lines, maxMessages: 10) else {
            Issue.record("a batch of 11 was taken with a limit of 10")
            return
        }
        #expect(error.response.status == 413)
        let text = String(decoding: error.response.body, as: UTF8.self)
        #expect(text.contains("\"code\":\"body_too_large\"") && text.contains("more than 10 messages"))
    }

    @Test func theDefaultLimitIsAThousand() {
        #expect(APIRouter.Options().maxBatchMessages == 1000)
    }
}

extension APIRouterBatchLimitTests {
    /// The array's elements are counted by a lexical scan before anything is parsed (nested arrays and
    /// brackets in strings do not count), and the scan stops past the limit.
    @Test func elementsAreCountedBeforeParsing() {
        let body = Data(#"[{"a":[1,2,{"b":"[x,y]"}]}, 3, "s", [4, 5], null]"#.utf8)
        #expect(APIRouter.topLevelElements(body, atMost: 100) == 5)
        #expect(APIRouter.topLevelElements(body, atMost: 2) == 3)
        #expect(APIRouter.topLevelElements(Data(#"{"to":"x","data":{"k":[1,2,3]}}"#.utf8), atMost: 1) == 0)
        // Broken after the limit: refused as too many before the parser would call it bad JSON.
        let broken = Data(("[" + Array(repeating: "{}", count: 12).joined(separator: ",") + ",{").utf8)
        guard case .failure(let error) = APIRouter.split(broken, jsonLines: false, maxMessages: 10) else {
            Issue.record("taken")
            return
        }
        #expect(error.response.status == 413)
    }
}

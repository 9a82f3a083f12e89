import CCS
import Testing
@testable import Daemon

/// Events of upstream messages and receipts ccsd could not fully decode (issue 7 item 4).
@Suite struct EventEncodingDecodeErrorTests {
    func decode(_ event: DispatcherEvent) throws -> [String: JSONValue] {
        try #require(try JSONValue.parse(String(event.jsonLine().dropLast())).objectValue)
    }

    @Test func undecodableUpstreamCarriesDecodeErrorAndRaw() throws {
        let raw = #"{"message_id":"u","from":"dev","data":{"t":x}"#
        let fields = try decode(.upstream(.init(messageID: "u", from: "dev", data: .null,
                                                decodeError: "gcm: the payload is not valid JSON", raw: raw)))
        #expect(fields["decode_error"] == .string("gcm: the payload is not valid JSON"))
        #expect(fields["raw"] == .string(raw))
        #expect(fields["data"] == .null)
        #expect(Array(fields.keys).sorted() == ["category", "data", "decode_error", "event", "from", "message_id", "raw"])
    }

    @Test func undecodableReceiptCarriesDecodeErrorAndRaw() throws {
        let fields = try decode(.receipt(.init(messageID: "dr2:m", from: "gcm.googleapis.com", decodeError: "e", raw: "{")))
        #expect(fields["decode_error"] == .string("e"))
        #expect(fields["raw"] == .string("{"))
    }

    @Test func decodedMessagesHaveNeitherField() throws {
        let fields = try decode(.upstream(.init(messageID: "u", from: "dev", data: .object([:]))))
        #expect(fields["decode_error"] == nil)
        #expect(fields["raw"] == nil)
    }

    @Test func bigNumbersInUpstreamDataAreWrittenDigitForDigit() throws {
        let data = try JSONValue.parse(#"{"n":18446744073709551616,"m":9223372036854775808}"#)
        let line = DispatcherEvent.upstream(.init(messageID: "u", from: "dev", data: data)).jsonLine()
        #expect(line.contains(#""data":{"m":9223372036854775808,"n":18446744073709551616}"#))
    }
}

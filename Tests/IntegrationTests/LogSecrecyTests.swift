import CCS
import CCSEmulator
import Foundation
import Testing

/// Sentinel tokens, keys and payload text through every rejection and error path of the real `ccsd`
/// executable against the emulator; all output is searched for them (issue 7 item 9).
///
/// Logs may show a token only as `shortenedToken` does (its first 8 characters and its length): each
/// sentinel token starts with a harmless prefix, so its marker, which follows, must never be in a log.
/// Message content (data, notification text) is never in a log at any level. The server key is never
/// in any output: logs, events or stdout.
@Suite(.serialized) struct LogSecrecyTests {
    static let tokenMarker = "SNTLTOKMID"
    static let payloadMarker = "SNTLPAYLOAD"

    /// A 160-character token-like value: `prefix`, 8 harmless characters, the marker, padding.
    static func token(_ prefix: String = "") -> String {
        let body = prefix + "AAAAAAAA" + tokenMarker
        return body + String(repeating: "x", count: 160 - body.count)
    }

    /// Rejected lines: each breaks one rule with a sentinel token or payload in it.
    static var rejectedLines: [String] {
        let t = token(), p = payloadMarker
        let data = #""data":{"k":"\#(p)-data"}"#
        return [
            // Targets that may be tokens.
            #"{"message_id":"r-to-space","to":"\#(t) x",\#(data)}"#,
            #"{"message_id":"r-to-slash","to":"/\#(t)",\#(data)}"#,
            #"{"message_id":"r-to-topic-typo","to":"/topic/\#(t)",\#(data)}"#,
            #"{"message_id":"r-to-type","to":["\#(t)"],\#(data)}"#,
            #"{"message_id":"r-regids-string","registration_ids":"\#(t)",\#(data)}"#,
            #"{"message_id":"r-regids-array","registration_ids":["\#(t)","\#(token("B"))"],\#(data)}"#,
            #"{"message_id":"r-condition","condition":"'\#(t)' in topics &&",\#(data)}"#,
            #"{"message":{"token":"/\#(t)","data":{"k":"\#(p)-v1"}}}"#,
            #"{"message":{"token":["\#(t)"]}}"#,
            #"{"message_id":"r-both","to":"\#(t)","condition":"'a' in topics",\#(data)}"#,
            // Payload rules.
            #"{"message_id":"r-reserved","to":"\#(t)","data":{"from":"\#(p)-reserved","google.x":"\#(p)-google"}}"#,
            #"{"message_id":"r-color","to":"\#(t)","notification":{"color":"\#(p)-color","title":"\#(p)-title"}}"#,
            #"{"message_id":"r-large","to":"\#(t)","data":{"k":"\#(p)-large\#(String(repeating: "y", count: 5000))"}}"#,
            #"{"message_id":"r-data-type","to":"\#(t)","data":{"k":["\#(p)-datatype"]}}"#,
            #"{"message_id":"r-title-type","to":"\#(t)","notification":{"title":{"t":"\#(p)-titletype"}}}"#,
            #"{"message_id":"r-locargs","to":"\#(t)","notification":{"body_loc_args":"\#(p)-locargs"}}"#,
            #"{"message_id":"r-unknown","to":"\#(t)","bogus":"\#(p)-unknown",\#(data)}"#,
            #"{"message_id":"r-unknown-notification","to":"\#(t)","notification":{"titel":"\#(p)-titel"}}"#,
            #"{"message_id":"r-ttl","to":"\#(t)","time_to_live":"\#(p)-ttl",\#(data)}"#,
            #"{"message_id":"r-priority","to":"\#(t)","priority":"\#(p)-priority",\#(data)}"#,
            #"{"message":{"token":"\#(t)","android":{"notification":{"title":"\#(p)-android"}},"# +
                #""apns":{"payload":{"aps":{"alert":{"title":"\#(p)-apns"}}}}}}"#,
            #"{"message":{"token":"\#(t)","webpush":{"fcm_options":{"link":"http://\#(p)-link"}}}}"#,
            // Lines that are not messages at all.
            #"{"to":"\#(t)","data":{"k":"\#(p)-truncated"#,
            #"["\#(t)","\#(p)-array"]"#,
            #"{"message_id":"r-too-long","to":"\#(t)","data":{"k":"\#(p)-long\#(String(repeating: "z", count: 70_000))"}}"#,
        ]
    }

    /// Accepted lines that end acked, nacked (bad tokens), retried, acked with a canonical id or as a group.
    static var acceptedLines: [String] {
        let p = payloadMarker
        return [
            #"{"message_id":"a-ok","to":"\#(token())","data":{"k":"\#(p)-ok"},"notification":{"title":"\#(p)-ok"},"delivery_receipt_requested":true}"#,
            #"{"message_id":"a-bad","to":"\#(token("bad-"))","data":{"k":"\#(p)-bad"}}"#,
            #"{"message_id":"a-unreg","to":"\#(token("unreg-"))","data":{"k":"\#(p)-unreg"}}"#,
            #"{"message_id":"a-flaky","to":"\#(token("flaky-"))","data":{"k":"\#(p)-flaky"}}"#,
            #"{"message_id":"a-canon","to":"\#(token("canon-"))","data":{"k":"\#(p)-canon"}}"#,
            #"{"message_id":"a-group","to":"\#(token("group-"))","data":{"k":"\#(p)-group"}}"#,
        ]
    }

    /// Where each sentinel was found in `text`, for the failure message.
    static func leaks(_ text: String, _ markers: [String]) -> [String] {
        text.split(separator: "\n").filter { line in markers.contains { line.contains($0) } }.map { String($0.prefix(400)) }
    }

    @Test func rejectionsNacksAndErrorsNeverLogTokensPayloadsOrTheKey() async throws {
        let key = "SNTLKEY-\(UUID().uuidString)"
        let directory = NSTemporaryDirectory() + "ccsd-secrecy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = directory + "/input.jsonl"
        let rejected = Self.rejectedLines, accepted = Self.acceptedLines
        try Data((rejected + accepted).joined(separator: "\n").utf8 + [0x0A]).write(to: URL(fileURLWithPath: input))

        // A run that logs in, at debug level (every log line there is), with upstream traffic too.
        let ccsd = try CCSDProcess(input: input, serverKey: key, extraArguments: ["--log-level", "debug"])
        defer { ccsd.cleanUp() }
        await waitUntil("every line answered", timeout: 30) {
            ccsd.events("rejected").count == rejected.count
                && ["a-ok", "a-bad", "a-unreg", "a-flaky", "a-canon", "a-group"].allSatisfy { id in
                    ccsd.events.contains { event in
                        event["message_id"] == .string(id)
                            && (event["event"] == .string("acked") || (event["event"] == .string("nacked") && event["final"] == .bool(true)))
                    }
                }
        }
        await waitUntil("the receipt", timeout: 10) { !ccsd.events("receipt").isEmpty }
        _ = try? ccsd.emulator.sendUpstream(count: 2)
        await waitUntil("upstream handed over", timeout: 10) { ccsd.events("upstream").count == 2 }
        #expect(ccsd.stop(signal: SIGTERM) == 0)

        // The same with a wrong key: authentication fails (exit 3), at info level.
        let wrongKey = "SNTLKEYWRONG-\(UUID().uuidString)"
        let refused = try CCSDProcess(input: input, serverKey: key, wrongKey: wrongKey, extraArguments: ["--exit-when-done", "--store", "memory"])
        defer { refused.cleanUp() }
        #expect(refused.waitForExit(timeout: 30) == 3, "log:\n\(refused.log)")

        // The runs went through the paths they were meant to (else the searches below prove nothing).
        let log = ccsd.log
        #expect(ccsd.events("rejected").count == rejected.count)
        #expect(log.components(separatedBy: "msg=\"message rejected\"").count - 1 == rejected.count)
        #expect(log.contains("msg=nack") && log.contains("bad-AAAA…(160)"), "log:\n\(log)")
        #expect(log.contains("msg=\"message failed\"") && log.contains("msg=\"message will be retried\""))
        #expect(log.contains("msg=\"message acked\"") && log.contains("msg=upstream") && log.contains("msg=receipt"))
        #expect(ccsd.eventsText.contains(Self.tokenMarker) && ccsd.eventsText.contains(Self.payloadMarker),
                "the sentinels never reached ccsd's outputs")
        #expect(refused.log.contains("authentication failed"), "log:\n\(refused.log)")
        // Whatever intake read ends one way or the other (memory store): nacked AUTHENTICATION_FAILED when it
        // was accepted before the login failed, rejected when read after. The intake starts after the pool, so
        // on loopback the login may fail before any line is read: then there are no events at all, which is
        // fine (nothing was taken). A durable store keeps the accepted ones instead (EndToEndTests).
        let ended = Set(refused.events("nacked").compactMap { $0["message_id"]?.stringValue }
            + refused.events("rejected").compactMap { $0["message_id"]?.stringValue })
        let taken = Set(refused.events("accepted").compactMap { $0["message_id"]?.stringValue })
        #expect(taken.isSubset(of: ended), "an accepted message did not end")
        #expect(refused.events("nacked").allSatisfy { $0["error"] == .string("AUTHENTICATION_FAILED") })

        // Logs: no token beyond its shortened form, no message content, at debug and at info level.
        let contentMarkers = [Self.tokenMarker, Self.payloadMarker, CCSEmulator.upstreamText]
        #expect(Self.leaks(log, contentMarkers).isEmpty, "debug log leaks:\n\(Self.leaks(log, contentMarkers).joined(separator: "\n"))")
        #expect(Self.leaks(refused.log, contentMarkers).isEmpty,
                "info log leaks:\n\(Self.leaks(refused.log, contentMarkers).joined(separator: "\n"))")
        // The key: nowhere, not in events, stdout or logs, nor in its SASL PLAIN form.
        func plain(_ key: String) -> String {
            Data("\0\(CCSDProcess.senderID)@gcm.googleapis.com\0\(key)".utf8).base64EncodedString()
        }
        for (name, text) in [("log", log), ("events", ccsd.eventsText), ("stdout", ccsd.stdout),
                             ("wrong-key log", refused.log), ("wrong-key events", refused.eventsText),
                             ("wrong-key stdout", refused.stdout)] {
            #expect(!text.contains(key) && !text.contains(wrongKey), "the server key is in the \(name)")
            #expect(!text.contains(plain(key)) && !text.contains(plain(wrongKey)), "the key's SASL form is in the \(name)")
        }
    }
}

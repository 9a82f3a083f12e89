import CCS
import Foundation
import Testing

/// The `ccsd` executable with `--input` on a FIFO, as the shipped systemd unit runs it (issue 7 item 8):
/// waiting for producers holds up neither connections nor signals, and producers may come and go.
@Suite(.serialized) struct FIFOInputTests {
    static func line(_ id: String) -> String {
        #"{"to":"tok-\#(id)-APA91b","message_id":"\#(id)","data":{"n":"1"},"time_to_live":600}"#
    }

    /// No producer ever opens the FIFO: ccsd still logs in, and SIGTERM still stops it gracefully (exit 0,
    /// with its log lines). Before: the FIFO was opened on the main thread before signal handling and the
    /// connections, so open(2) blocked, nothing connected, and SIGTERM killed ccsd without a word.
    @Test func withoutProducerCCSDConnectsAndStopsOnSIGTERM() async throws {
        let ccsd = try CCSDProcess()
        defer { ccsd.cleanUp() }
        await waitUntil("ccsd logged in with no producer on its FIFO", timeout: 15) {
            ccsd.emulator.stats().authenticated >= 1
        }
        let status = ccsd.stop(signal: SIGTERM)
        #expect(status == 0, "ccsd did not exit 0 on SIGTERM; log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("msg=\"signal received; stopping\""), "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("msg=stopped"), "log:\n\(ccsd.log)")
    }

    /// Two producers one after the other, each opening, writing and closing the FIFO: both are taken and
    /// both messages acked. Before: the first producer's close was read as the end of input, ccsd closed
    /// the FIFO, and the second producer found no reader (a blocking open waits forever).
    @Test func producersOneAfterAnotherAreAllTaken() async throws {
        let ccsd = try CCSDProcess()
        defer { ccsd.cleanUp() }
        #expect(produce([Self.line("first")], into: ccsd.fifoPath), "the first producer found no reader")
        await waitUntil("the first producer's message acked", timeout: 15) {
            !ccsd.events("acked", messageID: "first").isEmpty
        }
        #expect(produce([Self.line("second-a"), Self.line("second-b")], into: ccsd.fifoPath),
                "the second producer found no reader: the first producer's close ended the input")
        await waitUntil("the second producer's messages acked", timeout: 15) {
            !ccsd.events("acked", messageID: "second-a").isEmpty && !ccsd.events("acked", messageID: "second-b").isEmpty
        }
        for id in ["first", "second-a", "second-b"] {
            #expect(ccsd.events("accepted", messageID: id).count == 1, "\(id) not accepted once")
        }
        #expect(!ccsd.log.contains("input ended"), "a producer's close was taken as the end of input; log:\n\(ccsd.log)")
        #expect(ccsd.stop(signal: SIGTERM) == 0, "log:\n\(ccsd.log)")
    }

    /// With `--exit-when-done` a FIFO is a batch input: ccsd waits for the producer without holding up the
    /// connections, and the input ends when the producer closes it; ccsd then exits 0 once all is final.
    @Test func exitWhenDoneEndsWhenTheProducerCloses() async throws {
        let ccsd = try CCSDProcess(extraArguments: ["--exit-when-done"])
        defer { ccsd.cleanUp() }
        await waitUntil("ccsd logged in before any producer", timeout: 15) { ccsd.emulator.stats().authenticated >= 1 }
        #expect(produce([Self.line("batch-1"), Self.line("batch-2")], into: ccsd.fifoPath))
        #expect(ccsd.waitForExit(timeout: 20) == 0, "log:\n\(ccsd.log)")
        #expect(ccsd.events("acked").count == 2)
    }

    /// With `--exit-when-done` and no producer yet, the reader waits in open(2), but only its own thread:
    /// ccsd logs in, and SIGTERM still stops it gracefully with exit 0.
    @Test func exitWhenDoneWaitingForAProducerStillStopsOnSIGTERM() async throws {
        let ccsd = try CCSDProcess(extraArguments: ["--exit-when-done"])
        defer { ccsd.cleanUp() }
        await waitUntil("ccsd logged in while waiting for a producer", timeout: 15) { ccsd.emulator.stats().authenticated >= 1 }
        #expect(ccsd.stop(signal: SIGTERM) == 0, "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("msg=stopped"), "log:\n\(ccsd.log)")
    }

    /// An input that cannot be opened is a usage error naming the path, exit 2, before any connection.
    @Test func missingInputIsAUsageErrorNamingThePath() async throws {
        let missing = NSTemporaryDirectory() + "ccsd-no-such-input-\(UUID().uuidString)"
        let ccsd = try CCSDProcess(input: missing)
        defer { ccsd.cleanUp() }
        #expect(ccsd.waitForExit(timeout: 20) == 2)
        #expect(ccsd.log.contains("--input: cannot open \(missing): No such file or directory"), "log:\n\(ccsd.log)")
        #expect(ccsd.emulator.stats().connectionsAccepted == 0)
    }
}

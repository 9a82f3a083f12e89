import Testing
@testable import CCS

/// Transcripts of the two-phase hand-over with the store (issue 8): the dispatcher asks (`.persist`,
/// `.record`) and waits to be told (`persisted`, `recorded(through:)`) before it reports, sends, ACKs, or
/// lets a final message go. The harness plays the store and holds its answers where the order matters.
@Suite struct DispatcherTwoPhaseTests {
    typealias Harness = DispatcherTests.Harness

    static let upstream = InboundMessage.Upstream(messageID: "u-1", from: "device-1", data: .object([:]))

    // MARK: Intake

    @Test func aMessageIsAcceptedAndSentOnlyOnceStored() {
        var h = Harness()
        h.startReady()
        h.holdPersists = true
        h.accept("m-1", line: 4)
        #expect(h.transcript.suffix(1) == ["persist m-1"])
        #expect(h.sends.isEmpty, "sent before it was stored")
        #expect(!h.events.contains(.accepted(messageID: "m-1")))
        #expect(h.dispatcher.outstanding == 1)
        // Its id is taken while it is being stored.
        h.accept("m-1", line: 5)
        #expect(h.events.last == .rejected(messageID: "m-1", field: "message_id", error: Dispatcher.duplicateError, line: 5))
        h.transcript.removeAll()
        h.answerPersists()
        #expect(h.transcript == ["persisted m-1", "send 1 m-1"])
        #expect(h.events.last == .accepted(messageID: "m-1"))
        #expect(h.sends.map(\.messageID) == ["m-1"])
    }

    @Test func storeAnswersDecideTheRejections() {
        var h = Harness()
        h.startReady()
        h.holdPersists = true
        for id in ["live", "final", "failed"] { h.accept(id, line: 1) }
        h.answer([
            PersistResult(messageID: "live", line: 1, outcome: .duplicateLive),
            PersistResult(messageID: "final", line: 1, outcome: .duplicateFinal(outcome: #"{"event":"acked","message_id":"final"}"#)),
            PersistResult(messageID: "failed", line: 1, outcome: .failed(reason: "/var/lib/ccsd/ccsd.sqlite3: database or disk is full")),
        ])
        #expect(Array(h.events.suffix(3)) == [
            .rejected(messageID: "live", field: "message_id", error: Dispatcher.duplicateError, line: 1),
            .rejected(messageID: "final", field: "message_id", error: Dispatcher.duplicateFinalError, line: 1,
                      outcome: #"{"event":"acked","message_id":"final"}"#),
            .rejected(messageID: "failed", field: "",
                      error: "ccsd could not store the message (/var/lib/ccsd/ccsd.sqlite3: database or disk is full); the message was not accepted",
                      line: 1, retryable: true),
        ])
        #expect(h.sends.isEmpty)
        #expect(h.dispatcher.outstanding == 0)
        // A failed one may be submitted again.
        h.accept("failed")
        h.answerPersists()
        #expect(h.sends.map(\.messageID) == ["failed"])
    }

    @Test func anUnavailableStoreRejectsRetryableAndDropsNothingAccepted() {
        var h = Harness(window: 1)
        h.startReady()
        h.accept("m-1")
        h.accept("m-2")
        h.dispatcher.storeUnavailable(reason: "disk full")
        h.accept("m-3", line: 9)
        #expect(h.events.last == .rejected(
            messageID: "m-3", field: "", error: "ccsd cannot store messages right now (disk full); the message was not accepted",
            line: 9, retryable: true))
        #expect(!h.transcript.contains("persist m-3"))
        // What was accepted carries on.
        h.ack("m-1", on: 1)
        h.ack("m-2", on: 1)
        #expect(h.finalEvents(for: "m-1").count == 1)
        #expect(h.finalEvents(for: "m-2").count == 1)
        h.dispatcher.storeAvailable()
        h.accept("m-3")
        #expect(h.sends.map(\.messageID) == ["m-1", "m-2", "m-3"])
    }

    // MARK: Final outcomes

    @Test func aFinalMessageLeavesTheLiveSetOnlyOnceItsEventIsRecorded() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.holdRecords = true
        h.transcript.removeAll()
        h.ack("m-1", on: 1)
        guard let request = h.heldRecords.last else { Issue.record("no record request"); return }
        #expect(request.event == .acked(messageID: "m-1", to: "token-a", canonicalRegistrationID: nil, group: nil))
        #expect(request.finalMessageID == "m-1")
        #expect(request.handedOverMessageID == nil)
        #expect(h.dispatcher.outstanding == 1)
        #expect(h.dispatcher.pending == 0)
        // Finalizing: never resent (a lost connection does not bring it back) and its id still taken.
        h.now = 10  // a healthy connection: it reconnects at once
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: h.now))
        h.apply(h.dispatcher.connectionReady(2, now: h.now))
        #expect(h.opened.count == 2)
        #expect(h.sends.map(\.messageID) == ["m-1"])
        h.accept("m-1")
        #expect(h.heldRecords.last?.event == .rejected(messageID: "m-1", field: "message_id", error: Dispatcher.duplicateError, line: nil))
        h.confirmRecords(through: request.id)
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.finalEvents(for: "m-1").count == 1)
        h.holdRecords = false
        h.confirmRecords()
        // Gone from the live set: the id is free for a new message.
        h.accept("m-1")
        #expect(h.sends.map(\.messageID) == ["m-1", "m-1"])
    }

    @Test func attemptsAndSendsAreReportedAsProgress() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.nack("m-1", "SERVICE_UNAVAILABLE", on: 1)
        let last = h.progress.last
        #expect(last?.messageID == "m-1")
        #expect(last?.attempts == 1)
        #expect(last?.sends == 1)
        #expect(last?.lastError == "SERVICE_UNAVAILABLE")
        h.advance(to: 2)
        #expect(h.progress.last?.sends == 2)
    }

    // MARK: Upstream and receipts

    @Test func anUpstreamMessageIsAckedOnlyAfterItsHandOverIsRecorded() {
        var h = Harness()
        h.startReady()
        h.holdRecords = true
        h.transcript.removeAll()
        h.receive(.upstream(Self.upstream), on: 1)
        #expect(h.acks.isEmpty, "ACKed before the hand-over was recorded")
        guard let request = h.heldRecords.last else { Issue.record("no record request"); return }
        #expect(request.handedOverMessageID == "u-1")
        #expect(request.finalMessageID == nil)
        // A redelivery before the record: not handed over again, and not ACKed before the record either.
        h.receive(.upstream(Self.upstream), on: 1)
        #expect(h.acks.isEmpty)
        #expect(h.heldRecords.count == 1)
        h.confirmRecords()
        #expect(h.transcript == ["record \(request.id) upstream u-1", "recorded \(request.id)", "ack 1 u-1", "ack 1 u-1"])
        #expect(h.acks.allSatisfy { $0 == (1, "device-1", "u-1") })
        // Once recorded, a redelivery is ACKed at once.
        h.receive(.upstream(Self.upstream), on: 1)
        #expect(h.acks.count == 3)
        #expect(h.events.filter { if case .upstream = $0 { true } else { false } }.count == 1)
    }

    @Test func aReceiptIsAckedOnlyAfterItsHandOverIsRecorded() {
        var h = Harness()
        h.startReady()
        h.holdRecords = true
        h.receive(.receipt(.init(messageID: "dr2:m-1", from: "gcm.googleapis.com", originalMessageID: "m-1")), on: 1)
        #expect(h.acks.isEmpty)
        #expect(h.heldRecords.last?.handedOverMessageID == "dr2:m-1")
        h.confirmRecords()
        #expect(h.acks.count == 1)
        #expect(h.acks.first.map { $0 == (1, "gcm.googleapis.com", "dr2:m-1") } == true)
    }

    @Test func noAckGoesOutWhenTheConnectionEndedBeforeTheRecord() {
        var h = Harness(connections: 2)
        h.startReady()
        h.holdRecords = true
        h.receive(.upstream(Self.upstream), on: 1)
        h.apply(h.dispatcher.connectionEnded(1, .lost(reason: "reset"), now: 0))
        h.confirmRecords()
        #expect(h.acks.isEmpty)
        #expect(h.dispatcher.counters.acksDropped == 1)
        // CCS redelivers on another connection: a duplicate, already recorded, ACKed at once there.
        h.receive(.upstream(Self.upstream), on: 2)
        #expect(h.acks.count == 1)
        #expect(h.acks.first.map { $0 == (2, "device-1", "u-1") } == true)
        #expect(h.events.filter { if case .upstream = $0 { true } else { false } }.count == 1)
    }

    @Test func recordsTheStoreNeverConfirmsReleaseNothing() {
        var h = Harness()
        h.startReady()
        h.accept("m-1")
        h.holdRecords = true
        h.receive(.upstream(Self.upstream), on: 1)
        h.ack("m-1", on: 1)
        h.advance(to: 1000)
        #expect(h.acks.isEmpty)
        #expect(h.dispatcher.outstanding == 1, "a final message left the live set before its event was recorded")
        #expect(h.dispatcher.unrecorded == 2)
        #expect(!h.dispatcher.isQuiescent)
        // Confirming only the first releases only the first.
        h.confirmRecords(through: h.heldRecords[0].id)
        #expect(h.acks.count == 1)
        #expect(h.dispatcher.outstanding == 1)
        // An id already confirmed, or never handed out, changes nothing.
        #expect(h.dispatcher.recorded(through: 0, now: h.now).isEmpty)
        h.confirmRecords(through: 10_000)
        #expect(h.dispatcher.outstanding == 0)
        #expect(h.dispatcher.unrecorded == 0)
    }

    // MARK: Restart

    @Test func restoredMessagesResumeInAcceptOrderWithTheirCountsAndExpiredOnesAreNeverSent() {
        var h = Harness()
        var first = Harness.record("r-1", ttl: 600, at: -100)
        first.attempts = 2
        first.sends = 3
        first.lastError = "SERVICE_UNAVAILABLE"
        let expired = Harness.record("r-2", ttl: 60, at: -100)
        var sentNowOrNever = Harness.record("r-3", ttl: 0, at: -0.5)
        sentNowOrNever.sends = 1
        let third = Harness.record("r-4", ttl: 600, at: -50)
        h.apply(h.dispatcher.restore([first, expired, sentNowOrNever, third], handedOver: [("u-1", -30)], now: 0))
        #expect(h.finalEvents(for: "r-2") == [.expired(messageID: "r-2")])
        #expect(h.finalEvents(for: "r-3") == [.expired(messageID: "r-3")])
        #expect(h.requests.compactMap(\.finalMessageID) == ["r-2", "r-3"])
        #expect(h.dispatcher.outstanding == 2)
        h.startReady()
        #expect(h.sends.map(\.messageID) == ["r-1", "r-4"])
        #expect(h.dispatcher.record("r-1")?.attempts == 2)
        #expect(h.dispatcher.record("r-1")?.sends == 4)
        // A restored id is live: a duplicate submit is refused.
        h.accept("r-1")
        #expect(h.events.last == .rejected(messageID: "r-1", field: "message_id", error: Dispatcher.duplicateError, line: nil))
        // The upstream dedupe survived: a redelivery is ACKed, not handed over again.
        h.receive(.upstream(Self.upstream), on: 1)
        #expect(h.acks.count == 1)
        #expect(!h.events.contains { if case .upstream = $0 { true } else { false } })
        // The time_to_live clock kept running: r-1 (600 s from -100) expires at 500 while it waits.
        #expect(h.dispatcher.record("r-1")?.expiresAt == 500)
        h.nack("r-1", "SERVICE_UNAVAILABLE", on: 1)
        h.advance(to: 500)
        #expect(h.finalEvents(for: "r-1") == [.expired(messageID: "r-1")])
        #expect(h.sends.filter { $0.messageID == "r-1" }.count == 1)
    }

    @Test func restoredMessagesPastTheirTimeToLiveExpireAtTheirTimer() {
        var h = Harness()
        h.apply(h.dispatcher.restore([Harness.record("r-1", ttl: 10, at: -5)], handedOver: [], now: 0))
        h.apply(h.dispatcher.start(now: 0))  // never logs in
        h.advance(to: 4.9)
        #expect(h.finalEvents(for: "r-1").isEmpty)
        h.advance(to: 5)
        #expect(h.finalEvents(for: "r-1") == [.expired(messageID: "r-1")])
    }

    // MARK: Logs

    @Test func theDispatcherSaysWhatToLog() {
        var h = Harness()
        h.startReady()
        h.ack("nobody", on: 1)
        h.receive(.control(controlType: "SOMETHING_NEW"), on: 1)
        h.receive(.unknown(messageType: "shiny", messageID: "x"), on: 1)
        h.receive(.nack(.init(messageID: "u-9", error: .badACK)), on: 1)
        h.now = 100
        h.apply(h.dispatcher.connectionEnded(1, .refused(condition: "host-unknown", reason: "stream error (host-unknown)"), now: h.now))
        let messages = h.logs.map(\.message)
        #expect(messages.contains("ack or nack for a message not in flight on this connection; ignored"))
        #expect(messages.contains("unknown control_type ignored"))
        #expect(messages.contains("unknown message_type ignored"))
        #expect(messages.contains("the server rejected an ACK ccsd sent; no downstream message is affected"))
        let refusal = h.logs.first { $0.level == .error }
        #expect(refusal?["condition"] == "host-unknown")
        #expect(refusal?["check"] == "jid_domain and the endpoint host")
        #expect(refusal.flatMap { Int($0["next_attempt_seconds"] ?? "") }.map { (240...360).contains($0) } == true)
    }

    // MARK: Stop with a durable store

    /// `keepsMessagesOnStop` (a durable store): an authentication failure ends nothing; every accepted message
    /// stays outstanding (stored, sent after the restart), including one whose insert commits after the stop.
    @Test func authenticationFailureWithADurableStoreKeepsEveryMessage() {
        var h = Harness()
        var configuration = h.dispatcher.configuration
        configuration.keepsMessagesOnStop = true
        h.dispatcher = Dispatcher(configuration: configuration)
        h.apply(h.dispatcher.start(now: 0))
        h.accept("m-1")
        h.holdPersists = true
        h.accept("m-2")
        h.apply(h.dispatcher.connectionEnded(1, .authenticationFailed(reason: "not-authorized"), now: 0))
        #expect(h.stops == ["not-authorized"])
        h.answerPersists()
        h.advance(to: 1000)
        #expect(h.opened.count == 1)
        #expect(h.finalEvents(for: "m-1").isEmpty && h.finalEvents(for: "m-2").isEmpty)
        #expect(h.dispatcher.outstanding == 2)
        #expect(h.sends.isEmpty)
        // New messages are refused (not retryable: ccsd stopped).
        h.accept("m-3")
        guard case .rejected(_, _, _, _, false, nil)? = h.events.last else { Issue.record("expected rejected"); return }
    }
}

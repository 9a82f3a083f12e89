import CCS
import CCSEmulator
import Foundation
import Testing
import XMLStream
import XMPP

/// The real `XMPPClient` against the emulator over TLS on loopback.
@Suite(.serialized) struct EmulatorLoopbackTests {
    @Test func loginSucceedsWithSenderJID() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        #expect(FileManager.default.fileExists(atPath: harness.caFile))
        let (client, probe) = await harness.connectReady()
        #expect(probe.jid?.hasPrefix("123456789@gcm.googleapis.com/") == true)
        #expect(probe.end == nil)
        let stats = harness.emulator.stats()
        #expect(stats.connectionsAccepted == 1 && stats.authenticated == 1 && stats.liveConnections == 1)
        harness.close(client)
    }

    @Test func wrongServerKeyEndsWithAuthenticationFailed() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = harness.connect(key: "not-the-key")
        defer { withExtendedLifetime(client) {} }
        await waitUntil("the client to end") { probe.end != nil }
        #expect(probe.end?.kind == .authenticationFailed)
        #expect(probe.jid == nil)
        #expect(harness.emulator.stats().authFailures == 1)
        #expect(harness.emulator.stats().authenticated == 0)
    }

    @Test func wrongJIDDomainEndsWithAuthenticationFailed() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = harness.connect(jidDomain: "fcm-xmpp.googleapis.com")
        defer { withExtendedLifetime(client) {} }
        await waitUntil("the client to end") { probe.end != nil }
        #expect(probe.end?.kind == .authenticationFailed)
    }

    @Test func downstreamIsAckedAndBadTokenNacked() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, CCSStanza.downstream(messageID: "m-1", json: #"{"to":"tok-1","message_id":"m-1","data":{"a":"<&>"}}"#))
        harness.send(client, CCSStanza.downstream(messageID: "m-2", json: #"{"to":"bad-tok","message_id":"m-2"}"#))
        await waitUntil("two replies") { probe.messages.count >= 2 }
        let messages = probe.messages
        #expect(probe.acks.contains { $0.messageID == "m-1" && $0.from == "tok-1" && $0.canonicalRegistrationID == nil })
        guard let nack = messages.compactMap({ if case .nack(let n) = $0 { n } else { nil } }).first else {
            Issue.record("no nack in \(messages)"); return
        }
        #expect(nack.messageID == "m-2" && nack.error == "BAD_REGISTRATION" && nack.from == "bad-tok")
        let stats = harness.emulator.stats()
        #expect(stats.downstreamReceived == 2 && stats.acked == 1 && stats.nacked == ["BAD_REGISTRATION": 1])
        harness.close(client)
    }

    @Test func missingMessageIDGetsAStanzaErrorWithTheStanzaID() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, CCSStanza.downstream(messageID: "m-7", json: #"{"to":"t","random":"text"}"#))
        await waitUntil("the stanza error") { !probe.messages.isEmpty }
        guard case .stanzaError(let error)? = probe.messages.first else { Issue.record("got \(probe.messages)"); return }
        #expect(error.resolvedMessageID == "m-7" && error.condition == "bad-request" && error.code == "400")
        #expect(error.text == "InvalidJson: JSON_PARSING_ERROR : Missing Required Field: message_id")
        #expect(harness.emulator.stats().stanzaErrors == 1)
        harness.close(client)
    }

    @Test func drainSendsPrefixedControlNacksNewMessagesThenClosesTheStream() async throws {
        let harness = try EmulatorHarness { $0.drainGraceMilliseconds = 300 }
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        let drained = try harness.emulator.drain()
        #expect(drained == 1)
        await waitUntil("the control message") { probe.messages.contains(.control(controlType: "CONNECTION_DRAINING")) }
        let control = try #require(probe.stanzas.first)
        #expect(control.child("gcm", namespace: XMLNamespace.gcm) != nil)
        harness.send(client, CCSStanza.downstream(messageID: "late", json: #"{"to":"tok","message_id":"late"}"#))
        await waitUntil("the draining nack") { probe.messages.count >= 2 }
        guard case .nack(let nack)? = probe.messages.last else { Issue.record("got \(probe.messages)"); return }
        #expect(nack.messageID == "late" && nack.error == "CONNECTION_DRAINING")
        await waitUntil("the server to close the stream") { probe.end != nil }
        #expect(probe.end?.kind == .streamClosedByPeer)
        await waitUntil("the connection to go") { harness.emulator.stats().liveConnections == 0 }
        #expect(harness.emulator.stats().drainedConnections == 1)
    }

    @Test func drainDropsRepliesStillPendingAtTheEndOfTheGrace() async throws {
        let harness = try EmulatorHarness {
            $0.drainGraceMilliseconds = 200
            $0.ackLatencyMilliseconds = 60_000
        }
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, CCSStanza.downstream(messageID: "slow", json: #"{"to":"tok","message_id":"slow"}"#))
        await waitUntil("the message to arrive") { harness.emulator.stats().downstreamReceived == 1 }
        try harness.emulator.drain()
        await waitUntil("the server to close the stream") { probe.end != nil }
        #expect(probe.messages == [.control(controlType: "CONNECTION_DRAINING")])
        #expect(harness.emulator.stats().acked == 0)
    }

    @Test func upstreamDataArrivesByteExactAndClientAcksAreRecorded() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        let sent = try harness.emulator.sendUpstream(count: 2)
        #expect(sent.messageIDs == ["u-1", "u-2"])
        await waitUntil("two upstream messages") { probe.messages.count == 2 }
        let upstream = probe.messages.compactMap { if case .upstream(let u) = $0 { u } else { nil } }
        #expect(upstream.map(\.messageID) == ["u-1", "u-2"])
        #expect(upstream.first?.data == .object(["text": .string("<b>Tom & \"Jerry\"</b> ' 😀 ]]>"), "n": .string("1")]))
        #expect(upstream.first?.from == "device-1" && upstream.first?.category == "com.example.app")
        #expect(upstream.first?.timeToLive == 86400)
        for message in upstream { harness.send(client, CCSStanza.ack(to: message.from, messageID: message.messageID)) }
        await waitUntil("the ACKs") { harness.emulator.stats().upstreamAcked == 2 }
        #expect(harness.emulator.clientAcks() == [.init(connection: 1, messageID: "u-1"), .init(connection: 1, messageID: "u-2")])
        harness.close(client)
    }

    @Test func unackedUpstreamIsRedeliveredOnAnotherConnection() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let first = await harness.connectReady()
        let second = await harness.connectReady()
        try harness.emulator.sendUpstream(count: 1, connection: 1)
        await waitUntil("the first delivery") { first.probe.messages.count == 1 }
        #expect(second.probe.messages.isEmpty)
        try harness.emulator.disconnect(connection: 1)
        await waitUntil("the redelivery") { second.probe.messages.count == 1 }
        guard case .upstream(let copy)? = second.probe.messages.first else { Issue.record("got \(second.probe.messages)"); return }
        #expect(copy.messageID == "u-1")
        #expect(harness.emulator.stats().upstreamRedelivered == 1)
        await waitUntil("the first client to see the drop") { first.probe.end != nil }
        #expect(first.probe.end?.kind == .transport)
        harness.close(second.client)
    }

    @Test func receiptFollowsTheAckAndItsAckIsCounted() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, CCSStanza.downstream(
            messageID: "r-1", json: #"{"to":"tok-9","message_id":"r-1","delivery_receipt_requested":true}"#))
        await waitUntil("ack and receipt") { probe.messages.count == 2 }
        guard case .receipt(let receipt)? = probe.messages.last else { Issue.record("got \(probe.messages)"); return }
        #expect(receipt.messageID == "dr2:r-1" && receipt.originalMessageID == "r-1")
        #expect(receipt.deviceRegistrationID == "tok-9" && receipt.from == "gcm.googleapis.com")
        #expect(receipt.status == "MESSAGE_SENT_TO_DEVICE")
        harness.send(client, CCSStanza.ack(to: receipt.from, messageID: receipt.messageID))
        await waitUntil("the receipt ACK") { harness.emulator.stats().receiptsAcked == 1 }
        harness.close(client)
    }

    @Test func hundredAndFirstUnackedMessageIsOneFlowControlViolation() async throws {
        let harness = try EmulatorHarness { $0.ackLatencyMilliseconds = 60_000 }
        defer { harness.shutdown() }
        let (client, _) = await harness.connectReady()
        var batch = ""
        for n in 1...101 {
            batch += CCSStanza.downstream(messageID: "f-\(n)", json: #"{"to":"tok","message_id":"f-\#(n)"}"#)
        }
        harness.send(client, batch)
        await waitUntil("101 messages") { harness.emulator.stats().downstreamReceived == 101 }
        let stats = harness.emulator.stats()
        #expect(stats.flowControlViolations == 1)
        #expect(stats.maxUnackedObserved == 101)
        #expect(stats.acked == 0)
        harness.close(client)
    }

    @Test func duplicatesAfterAckAndResendsAfterNackAreCountedApart() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, CCSStanza.downstream(messageID: "d-1", json: #"{"to":"tok","message_id":"d-1"}"#))
        harness.send(client, CCSStanza.downstream(messageID: "s-1", json: #"{"to":"flaky-1","message_id":"s-1"}"#))
        await waitUntil("two replies") { probe.messages.count == 2 }
        harness.send(client, CCSStanza.downstream(messageID: "d-1", json: #"{"to":"tok","message_id":"d-1"}"#))
        harness.send(client, CCSStanza.downstream(messageID: "s-1", json: #"{"to":"flaky-1","message_id":"s-1"}"#))
        await waitUntil("four replies") { probe.messages.count == 4 }
        #expect(probe.acks.last?.messageID == "s-1" && probe.acks.last?.from == "flaky-1")
        let stats = harness.emulator.stats()
        #expect(stats.duplicateMessageIDs == 1 && stats.resends == 1)
        #expect(stats.nacked == ["SERVICE_UNAVAILABLE": 1] && stats.acked == 3)
        harness.close(client)
    }

    @Test func malformedXMLEndsTheStreamWithTheParsersCondition() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        harness.send(client, "<message><gcm xmlns='google:mobile:data'>{}</oops></message>")
        await waitUntil("the stream error") { probe.end != nil }
        #expect(probe.end?.kind == .streamError)
        #expect(probe.end?.condition == "not-well-formed")
        #expect(harness.emulator.stats().xmlErrors == 1)
        // The emulator keeps serving.
        let (again, probe2) = await harness.connectReady()
        #expect(probe2.jid != nil)
        harness.close(again)
    }

    @Test func streamErrorCommandAndPingReachTheClient() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let (client, probe) = await harness.connectReady()
        defer { withExtendedLifetime(client) {} }
        try harness.emulator.ping()
        await waitUntil("the pong") { harness.emulator.stats().pongsReceived == 1 }
        try harness.emulator.sendStreamError(condition: "conflict")
        await waitUntil("the stream error") { probe.end != nil }
        #expect(probe.end?.kind == .streamError && probe.end?.condition == "conflict")
    }

    @Test func controlLinesAnswerJSON() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        #expect(harness.emulator.handle(commandLine: "drain") == #"{"ok":false,"error":"no ready connection"}"#)
        #expect(harness.emulator.handle(commandLine: "frobnicate").hasPrefix(#"{"ok":false,"error":"unknown command frobnicate"#))
        let (client, probe) = await harness.connectReady()
        #expect(harness.emulator.handle(commandLine: "upstream 1 1") == #"{"ok":true,"connection":1,"message_ids":["u-1"]}"#)
        await waitUntil("the upstream message") { probe.messages.count == 1 }
        let stats = harness.emulator.handle(commandLine: "stats")
        #expect(stats.hasPrefix(#"{"ok":true,"stats":{"connections_accepted":1,"authenticated":1"#))
        #expect(stats.contains(#""upstream_sent":1"#))
        #expect(harness.emulator.handle(commandLine: "upstream 1 99") == #"{"ok":false,"error":"no live connection 99"}"#)
        harness.close(client)
    }
}

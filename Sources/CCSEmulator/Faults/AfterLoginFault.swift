import CCS
import XMLStream

/// How the emulator ends every stream right after login: the fault behind reconnect storms (a client that
/// reconnects at once after every drop of a logged-in connection hammers such a server).
///
/// The stream ends when the client's first `<message>` after login arrives (counted as a downstream
/// arrival and never answered, so the client must resend it), or `afterLoginFaultDelayMilliseconds` after
/// login if no message comes first.
public enum AfterLoginFault: Sendable, Equatable, CustomStringConvertible {
    /// `<stream:error><CONDITION/></stream:error></stream:stream>`, then a clean TLS close (RFC 6120 §4.9).
    case streamError(condition: String)
    /// `</stream:stream>`, then a clean TLS close (RFC 6120 §4.4).
    case streamEnd
    /// TLS close_notify and TCP FIN, without a stream end.
    case fin
    /// A TCP reset: no stream end, no close_notify.
    case rst
    /// Bytes that are not well-formed XML (`AfterLoginFault.garbage`), then a clean TLS close: the client's
    /// parser fails first (RFC 6120 §4.9.3.13 `not-well-formed`).
    case garbage
    /// The `see-other-host` stream error (RFC 6120 §4.9.3.19) naming `HOST:PORT` as its text.
    case seeOtherHost(String)

    /// What `garbage` writes: an unterminated start tag inside a stanza.
    public static let garbageBytes = "<message><gcm xmlns=\"google:mobile:data\">{}</gcm><<</message>"

    /// Parses the command-line form: `stream-error:CONDITION`, `stream-end`, `fin`, `rst`, `garbage`,
    /// `see-other-host[:HOST:PORT]` (default host `other-host.invalid:5235`).
    /// - Returns: nil for any other text, or a condition that is not lowercase letters and `-`.
    public init?(parsing text: String) {
        switch text {
        case "stream-end": self = .streamEnd
        case "fin": self = .fin
        case "rst": self = .rst
        case "garbage": self = .garbage
        case "see-other-host": self = .seeOtherHost("other-host.invalid:5235")
        default:
            if text.hasPrefix("see-other-host:") {
                let host = String(text.dropFirst("see-other-host:".count))
                guard !host.isEmpty else { return nil }
                self = .seeOtherHost(host)
            } else if text.hasPrefix("stream-error:") {
                let condition = String(text.dropFirst("stream-error:".count))
                guard !condition.isEmpty, condition.allSatisfy({ ("a"..."z").contains($0) || $0 == "-" }) else { return nil }
                self = .streamError(condition: condition)
            } else {
                return nil
            }
        }
    }

    /// The command-line form.
    public var description: String {
        switch self {
        case .streamError(let condition): "stream-error:\(condition)"
        case .streamEnd: "stream-end"
        case .fin: "fin"
        case .rst: "rst"
        case .garbage: "garbage"
        case .seeOtherHost(let host): "see-other-host:\(host)"
        }
    }

    /// The `see-other-host` stream error with `host` as the condition's text (RFC 6120 §4.9.3.19).
    static func seeOtherHostError(_ host: String) -> String {
        var out = "<stream:error><see-other-host xmlns=\"\(XMLNamespace.streams)\">"
        XMLWriter.appendEscapedText(host, to: &out)
        return out + "</see-other-host></stream:error>"
    }
}

/// How the emulator answers the client's ACKs of upstream messages and receipts instead of taking them:
/// the fault behind "an error about an ACK resolved a downstream message of the same message_id".
/// A rejected ACK leaves its upstream message pending (redelivered when the connection closes).
public enum AckRejection: String, Sendable, Equatable, CaseIterable {
    /// A stanza error with the ACK stanza's own `id` and its payload echoed, as CCS answers a stanza it
    /// cannot take (ccs-protocol.md §3).
    case stanzaError = "stanza-error"
    /// A nack `BAD_ACK` whose message_id is the upstream message_id the client ACKed (ccs-protocol.md §4).
    case badAck = "bad-ack"
    /// The stanza error, then the nack.
    case both
}

extension CCSEmulator {
    // MARK: After-login fault

    /// At login: arms the fallback of the after-login fault (no message came first).
    func armAfterLoginFault(_ connection: EmulatorConnection) {
        guard configuration.afterLoginFault != nil else { return }
        let delay = Double(max(0, configuration.afterLoginFaultDelayMilliseconds)) / 1000
        _ = loop.schedule(after: delay) { [weak self, weak connection] in
            guard let self, let connection else { return }
            self.endStreamAfterLogin(connection)
        }
    }

    /// A stanza from a logged-in client while the after-login fault is on: a `<message>` (a downstream
    /// message is counted, never answered) ends the stream. Returns true when it did.
    func endStreamAfterLoginIfDue(_ stanza: XMLElement, on connection: EmulatorConnection) -> Bool {
        guard configuration.afterLoginFault != nil, connection.phase == .ready, stanza.name == "message" else { return false }
        if case .downstream(let message) = ClientPayload.classify(stanza) {
            counters.downstreamReceived += 1
            var entry = seen[message.messageID] ?? Seen(attempts: 0, target: message.target, ack: nil)
            if seen[message.messageID] != nil {
                if entry.acked { counters.duplicateMessageIDs += 1 } else { counters.resends += 1 }
            }
            entry.attempts += 1
            seen[message.messageID] = entry
            counters.maxAttemptsPerMessageID = max(counters.maxAttemptsPerMessageID, entry.attempts)
        }
        endStreamAfterLogin(connection)
        return true
    }

    /// Ends a ready connection's stream in the configured form.
    private func endStreamAfterLogin(_ connection: EmulatorConnection) {
        guard let fault = configuration.afterLoginFault, connection.phase == .ready else { return }
        counters.streamsEndedAfterLogin += 1
        log("ending the stream after login: \(fault)", connection: connection.id)
        switch fault {
        case .streamError(let condition): connection.closeStream(condition: condition)
        case .streamEnd: connection.closeStream(condition: nil)
        case .seeOtherHost(let host):
            connection.write(AfterLoginFault.seeOtherHostError(host))
            connection.closeStream(condition: nil)
        case .fin: connection.closeTransport(reset: false)
        case .rst: connection.closeTransport(reset: true)
        case .garbage:
            connection.write(AfterLoginFault.garbageBytes)
            connection.closeTransport(reset: false)
        }
    }

    // MARK: ACK rejection

    /// Answers a client ACK per `configuration.ackRejection` instead of taking it. Returns true when it did.
    func rejectAck(_ stanza: XMLElement, messageID: String, on connection: EmulatorConnection) -> Bool {
        guard let rejection = configuration.ackRejection else { return false }
        let payload = stanza.child("gcm", namespace: XMLNamespace.gcm)?.text.trimmingXMLWhitespace() ?? ""
        counters.acksRejected += 1
        if rejection != .badAck {
            counters.stanzaErrors += 1
            connection.write(ServerStanzas.stanzaError(id: stanza.attribute("id"), echoedPayload: payload,
                                                       text: "InvalidJson: ACK not accepted (emulated)"))
        }
        if rejection != .stanzaError {
            let to = (try? JSONValue.parse(payload))?["to"]?.stringValue
            counters.nacked[CCSErrorCode.badACK.rawValue, default: 0] += 1
            connection.write(ServerStanzas.message(json: DownstreamPolicy.nack(
                messageID: messageID, from: to, code: .badACK, description: "Invalid ACK (emulated)")))
        }
        return true
    }
}

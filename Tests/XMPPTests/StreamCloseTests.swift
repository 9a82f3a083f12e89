import Testing
import XMLStream
@testable import XMPP

/// Every close, in every negotiation state, is well-formed for the stream the server is in (RFC 6120 §4.4,
/// §6.4.6): a footer only while a stream of ours is open, after the restart header once the server
/// restarted, never twice, nothing after it; and a footer before the transport closes after a failure.
/// Before the fix `close()` wrote `</stream:stream>` in every state, also during SASL, so after a
/// `<success/>` already on its way the footer landed on the server's restarted stream before our new
/// header (the server answers `not-well-formed`); failures other than stream errors wrote no footer.
@Suite struct StreamCloseTests {
    typealias T = StreamNegotiationTests
    let credentials = XMPPCredentials(username: "123456789", password: Secret("s3cr3t-server-key"), jidDomain: "gcm.googleapis.com")

    /// What the client wrote, as the server reads it: the streams, each a list of what was written on it.
    /// A new stream begins with each header. `failed` is the error reported.
    struct Wire {
        var streams: [[String]] = []
        var failed: XMPPError?
        var unframed: [String] = []  // written with no stream of ours open

        mutating func apply(_ actions: [StreamNegotiation.Action]) {
            for action in actions {
                switch action {
                case .sendStreamHeader, .restartStream: streams.append(["header"])
                case .sendStreamFooter: write("footer")
                case .send(let element): write("<\(element.name)>")
                case .fail(let error): failed = error
                case .ready, .deliver, .notice: break
                }
            }
        }

        private mutating func write(_ item: String) {
            if streams.isEmpty || streams[streams.count - 1].last == "footer" { unframed.append(item) } else { streams[streams.count - 1].append(item) }
        }

        /// Every stream has a header, at most one footer, and nothing after it; nothing outside a stream.
        func checkWellFormed(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(unframed.isEmpty, "written outside a stream of ours: \(unframed); \(comment?.description ?? "")",
                    sourceLocation: sourceLocation)
            for stream in streams {
                #expect(stream.first == "header", sourceLocation: sourceLocation)
                #expect(stream.filter { $0 == "footer" }.count <= 1, "\(streams)", sourceLocation: sourceLocation)
            }
        }

        var lastStreamClosed: Bool { streams.last?.last == "footer" }
    }

    /// The negotiation steps, in order; `reach(step)` drives a fresh machine to it, recording the wire.
    enum Step: Int, CaseIterable, CustomTestStringConvertible {
        case idle, awaitingHeader, awaitingFeatures, authenticating, awaitingRestartHeader, awaitingBindFeatures,
             binding, establishingSession, ready
        var testDescription: String { "\(self)" }
    }

    func reach(_ step: Step) -> (StreamNegotiation, Wire) {
        var machine = StreamNegotiation(credentials: credentials)
        var wire = Wire()
        let path: [(inout StreamNegotiation) -> [StreamNegotiation.Action]] = [
            { $0.start() },
            { $0.streamStarted(T.header()) },
            { $0.stanzaReceived(T.features([T.mechanisms(["SCRAM-SHA-1", "PLAIN"])])) },
            { $0.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl)) },
            { $0.streamStarted(T.header(id: "s2")) },
            { $0.stanzaReceived(T.features([T.bindFeature, T.sessionFeature(optional: false)])) },
            { m in m.stanzaReceived(T.bindResult(id: "bind-1", jid: "123456789@gcm.googleapis.com/r")) },
            { $0.stanzaReceived(T.iq("result", id: "session-2")) },
        ]
        for index in 0..<step.rawValue { wire.apply(path[index](&machine)) }
        return (machine, wire)
    }

    @Test(arguments: Step.allCases)
    func closeInEveryStateIsWellFormed(step: Step) {
        var (machine, wire) = reach(step)
        wire.apply(machine.close())
        wire.apply(machine.close())  // a second close adds nothing
        switch step {
        case .idle:
            #expect(wire.streams.isEmpty, "a footer without a stream")
        case .authenticating:
            // The server may have restarted its stream already: nothing until the SASL outcome.
            #expect(wire.streams == [["header", "<auth>"]])
        default:
            #expect(wire.lastStreamClosed, "\(wire.streams)")
        }
        // The server's footer in answer adds no second footer; stanzas after it start nothing.
        wire.apply(machine.stanzaReceived(T.features([T.bindFeature])))
        wire.apply(machine.stanzaReceived(T.iq("get", id: "p1", children: [XMLElement(name: "ping", namespace: XMLNamespace.ping)])))
        wire.apply(machine.streamEnded())
        wire.checkWellFormed("closed in \(step)")
    }

    /// Closing during SASL, then `<success/>`: the server restarted its stream, so ours opens (the restart
    /// header) and closes at once; the old stream gets no footer of ours after the server left it.
    @Test func closeDuringSASLThenSuccessOpensAndClosesTheRestartedStream() {
        var (machine, wire) = reach(.authenticating)
        wire.apply(machine.close())
        wire.apply(machine.stanzaReceived(XMLElement(name: "success", namespace: XMLNamespace.sasl)))
        #expect(wire.streams == [["header", "<auth>"], ["header", "footer"]])
        // The restarted stream's header and features start no bind.
        wire.apply(machine.streamStarted(T.header(id: "s2")))
        wire.apply(machine.stanzaReceived(T.features([T.bindFeature])))
        #expect(wire.streams == [["header", "<auth>"], ["header", "footer"]])
        #expect(!machine.isReady)
        wire.checkWellFormed()
    }

    /// Closing during SASL, then `<failure/>`: the old stream is still the server's, and gets its footer.
    @Test func closeDuringSASLThenFailureClosesTheFirstStream() {
        var (machine, wire) = reach(.authenticating)
        wire.apply(machine.close())
        wire.apply(machine.stanzaReceived(XMLElement(name: "failure", namespace: XMLNamespace.sasl,
                                                     children: [XMLElement(name: "not-authorized", namespace: XMLNamespace.sasl)])))
        #expect(wire.streams == [["header", "<auth>", "footer"]])
        wire.checkWellFormed()
    }

    /// A failed login writes the footer before the transport closes.
    @Test func aSASLFailureWritesTheFooterBeforeTheFailure() {
        var (machine, _) = reach(.authenticating)
        let actions = machine.stanzaReceived(XMLElement(name: "failure", namespace: XMLNamespace.sasl,
                                                        children: [XMLElement(name: "not-authorized", namespace: XMLNamespace.sasl)]))
        #expect(actions.count == 2)
        #expect(actions.first == .sendStreamFooter)
        guard case .fail(let error)? = actions.last else { Issue.record("expected fail, got \(actions)"); return }
        #expect(error.kind == .authenticationFailed)
    }

    /// Every failure, in every state where a stream of ours is open, closes it with one footer first.
    @Test(arguments: Step.allCases)
    func everyFailureClosesOurStreamOnce(step: Step) {
        for failure in 0..<3 {
            var (machine, wire) = reach(step)
            switch failure {
            case 0: wire.apply(machine.failExternally(XMPPError(.negotiationTimedOut, message: "20 s")))
            case 1: wire.apply(machine.streamEnded())
            default:
                wire.apply(machine.stanzaReceived(XMLElement(
                    name: "error", namespace: XMLNamespace.stream,
                    children: [XMLElement(name: "conflict", namespace: XMLNamespace.streams)])))
            }
            #expect(wire.failed != nil)
            #expect(step == .idle ? wire.streams.isEmpty : wire.lastStreamClosed, "\(step), failure \(failure): \(wire.streams)")
            wire.apply(machine.close())
            wire.apply(machine.streamEnded())
            wire.checkWellFormed("\(step), failure \(failure)")
        }
    }
}

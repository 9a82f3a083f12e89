import CCS
import Daemon
import Testing
import TLS
import XMLStream
import XMPP

/// `XMPPClient` behind the `XMPPConnection` seam keeps the re-entrancy rule: its end, which it reports
/// synchronously, reaches the delegate on a later loop turn, not inside the delegate's own call. No socket:
/// a client closed before it started ends at once.
@Suite struct XMPPClientBridgeTests {
    final class Recorder: XMPPConnectionDelegate, @unchecked Sendable {
        // @unchecked Sendable: touched only on the loop.
        var events: [String] = []
        func connectionDidBecomeReady(_ connection: any XMPPConnection, jid: String) { events.append("ready") }
        func connection(_ connection: any XMPPConnection, didReceive stanza: XMLElement) { events.append("stanza") }
        func connection(_ connection: any XMPPConnection, didEndWith error: XMPPError) {
            events.append("end \(connection.connectionID) \(error.kind == .closedLocally)")
        }
    }

    @Test func theEndComesOnALaterTurnNotInsideClose() {
        let loop = EventLoop(label: "bridge-test")
        let recorder = Recorder()
        let factory = XMPPClientFactory(loop: loop) { endpoint in
            XMPPClientConfiguration(host: endpoint.host, port: endpoint.port,
                                    credentials: XMPPCredentials(username: "1", password: Secret("k"), jidDomain: "gcm.googleapis.com"))
        }
        let duringClose: [String] = loop.submitAndWait {
            let connection = factory.makeConnection(id: 4, endpoint: Endpoint(host: "127.0.0.1", port: 1), delegate: recorder)
            #expect(connection.connectionID == 4)
            #expect(connection is XMPPClient)
            connection.close()  // not started: XMPPClient ends at once, inside this call
            return recorder.events
        }
        #expect(duringClose == [])
        let later = loop.submitAndWait { recorder.events }  // the loop is serial: the deferred end ran before this
        #expect(later == ["end 4 true"])
    }
}

import Testing
@testable import XMPP

/// Which ends of a stream reconnecting cannot heal (RFC 6120 §4.9.3): classified once, here.
@Suite struct XMPPErrorTests {
    @Test(arguments: ["host-unknown", "improper-addressing", "invalid-namespace", "unsupported-version", "not-authorized"])
    func serverStreamErrorsThatCannotHealAreNamed(condition: String) {
        #expect(XMPPError(.streamError, condition: condition, message: "").unhealableCondition == condition)
    }

    @Test(arguments: ["see-other-host", "conflict", "system-shutdown", "policy-violation", "reset", "made-up-condition"])
    func otherStreamErrorsAreDrops(condition: String) {
        #expect(XMPPError(.streamError, condition: condition, message: "").unhealableCondition == nil)
    }

    @Test func onlyTheServersStreamErrorsCount() {
        // Our own parser's condition, a SASL failure and a transport end are not refusals by the server.
        #expect(XMPPError(.invalidXML, condition: "invalid-namespace", message: "").unhealableCondition == nil)
        #expect(XMPPError(.authenticationFailed, condition: "not-authorized", message: "").unhealableCondition == nil)
        #expect(XMPPError(.transport, message: "connection reset").unhealableCondition == nil)
    }
}

import Testing
import TLS

@Suite struct TLSErrorTests {
    @Test func descriptionNamesWhatHostAndReason() {
        let error = TLSError(.certificateVerificationFailed, host: "fcm-xmpp.googleapis.com", reason: "hostname mismatch")
        #expect(error.description == "TLS certificate verification failed for fcm-xmpp.googleapis.com: hostname mismatch")
        #expect(TLSError(.writeBufferFull, reason: "full").description == "TLS write buffer full: full")
        #expect(TLSError(.connectFailed, host: "h", reason: "Connection refused").description == "TCP connect failed for h: Connection refused")
    }
}

import CCS
import XMPP

extension CCSDaemon {
    /// A CCS payload stanza as its `gcm` text (the stream parser's shortcut for the usual `<message>`): read
    /// by `InboundMessage.parse(payload:)`, which gives what `parse(stanza:)` gives for the whole element,
    /// and handled as `connection(_:didReceive:)` handles it. Always taken.
    public func connection(_ connection: any XMPPConnection, didReceivePayload text: UnsafeRawBufferPointer) -> Bool {
        // Straight to the message or the error, with no `Result` in between: wrapping the parsed message and
        // taking it out again copied it and destroyed the wrapper.
        do throws(InboundParseError) {
            received(try InboundMessage.parse(payload: text), on: connection)
        } catch {
            receivedUnreadable(error, on: connection)
        }
        return true
    }
}

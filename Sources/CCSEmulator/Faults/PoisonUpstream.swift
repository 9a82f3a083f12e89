/// Fault mode "poison upstream" (`EmulatorConfiguration.poisonUpstream`, `ccs-emulator --poison-upstream`):
/// upstream messages and a receipt that a client cannot fully decode, as independent CCS servers and real
/// devices produce them (ccs-protocol.md §3). A client that does not ACK them gets them redelivered after
/// every reconnect, forever; a correct client hands each over once and ACKs it.
///
/// Sent once, as ordinary upstream traffic, on the first connection that becomes ready: when it is bound,
/// the emulator pings it and sends the poison when the pong arrives, which is after the client's session
/// request (TCP keeps the client's order), so the poison tests decoding, not early-stanza handling. Each is
/// pending until ACKed and redelivered on another connection when its connection closes (counted in
/// `upstreamRedelivered`).
extension CCSEmulator {
    /// The poison payloads: message_id and the `gcm` JSON text.
    /// - `poison-high`, `poison-low`: upstream with a lone high / lone low / reversed surrogate escape.
    /// - `dr2:poison-receipt`: a receipt with a lone surrogate escape in `device_registration_id`.
    /// - `poison-number`: upstream with a number no 64-bit float holds (`1e400`) in `data`.
    /// - `poison-broken`: upstream whose JSON does not parse (a bare word as a value), with a readable
    ///   message_id and from.
    /// - `"poison-id-\ud800"`, `"poison-id-\ud801"`, `"poison-id-\udfff"`: upstream messages whose message_ids
    ///   differ only in a lone surrogate escape, and `poison-id-\u{FFFD}` (written `\ufffd`): four distinct
    ///   messages that all read as `poison-id-U+FFFD`. Each is pending under its message_id as a server keeps
    ///   it: the JSON literal for the lone surrogates (see `ClientPayload.ack`), so only an ACK that echoes
    ///   the literal ACKs it.
    /// - `poison-type-null`, `-number`, `-bool`, `-array`, `-object`, `-garbage`: upstream messages whose
    ///   `message_type` is not a string (the last also with trailing garbage after the object).
    public static let poisonUpstreamPayloads: [(messageID: String, json: String)] = [
        ("poison-high", #"{"category":"com.example.app","data":{"text":"lone high \ud83d here"},"message_id":"poison-high","from":"device-poison-1"}"#),
        ("poison-low", #"{"category":"com.example.app","data":{"text":"lone low \udc00, reversed \ude00\ud83d, pair \ud83d\ude00"},"message_id":"poison-low","from":"device-poison-2"}"#),
        ("dr2:poison-receipt", #"{"category":"com.example","data":{"message_status":"MESSAGE_SENT_TO_DEVICE","original_message_id":"poison-receipt","device_registration_id":"tok\ud83d"},"message_id":"dr2:poison-receipt","message_type":"receipt","from":"gcm.googleapis.com"}"#),
        ("poison-number", #"{"category":"com.example.app","data":{"n":1e400,"text":"big"},"message_id":"poison-number","from":"device-poison-3"}"#),
        ("poison-broken", #"{"category":"com.example.app","data":{"text":unquoted},"message_id":"poison-broken","from":"device-poison-4"}"#),
        (#""poison-id-\ud800""#, #"{"data":{"which":"d800"},"message_id":"poison-id-\ud800","from":"device-poison-5"}"#),
        (#""poison-id-\ud801""#, #"{"data":{"which":"d801"},"message_id":"poison-id-\ud801","from":"device-poison-5"}"#),
        (#""poison-id-\udfff""#, #"{"data":{"which":"dfff"},"message_id":"poison-id-\udfff","from":"device-poison-5","n":1e400}"#),
        ("poison-id-\u{FFFD}", #"{"data":{"which":"fffd"},"message_id":"poison-id-\ufffd","from":"device-poison-5"}"#),
        ("poison-type-null", #"{"data":{"k":"v"},"message_id":"poison-type-null","from":"device-poison-6","message_type":null}"#),
        ("poison-type-number", #"{"data":{"k":"v"},"message_id":"poison-type-number","from":"device-poison-6","message_type":5}"#),
        ("poison-type-bool", #"{"data":{"k":"v"},"message_id":"poison-type-bool","from":"device-poison-6","message_type":true}"#),
        ("poison-type-array", #"{"data":{"k":"v"},"message_id":"poison-type-array","from":"device-poison-6","message_type":["ack"]}"#),
        ("poison-type-object", #"{"data":{"k":"v"},"message_id":"poison-type-object","from":"device-poison-6","message_type":{}}"#),
        ("poison-type-garbage", #"{"data":{"k":"v"},"message_id":"poison-type-garbage","from":"device-poison-6","message_type":null} garbage"#),
    ]

    /// Poison nothing can be recovered from, so a client cannot ACK it and the emulator redelivers it after
    /// every reconnect: `poison-nofrom` (an upstream message without `from`, in JSON that does not parse) and
    /// `poison-garbage` (not JSON at all; the id is the emulator's own key, the client never sees it).
    public static let poisonUpstreamUnrecoverable: [(messageID: String, json: String)] = [
        ("poison-nofrom", #"{"category":"com.example.app","data":{"text":unquoted},"message_id":"poison-nofrom"}"#),
        ("poison-garbage", #"this is not JSON \ud83d"#),
    ]

    /// A connection is bound: ping it, so the poison follows its pong. Call on the loop.
    func startPoisonUpstream(on connection: EmulatorConnection) {
        guard configuration.poisonUpstream, !poisonUpstreamSent else { return }
        _ = try? ping(connection: connection.id)
    }

    /// A pong arrived on `connection`: send the poison payloads there, once per emulator run. Call on the loop.
    func sendPoisonUpstreamIfDue(on connection: EmulatorConnection) {
        guard configuration.poisonUpstream, !poisonUpstreamSent else { return }
        poisonUpstreamSent = true
        for payload in Self.poisonUpstreamPayloads + Self.poisonUpstreamUnrecoverable {
            deliverUpstream(messageID: payload.messageID, json: payload.json, on: connection)
            counters.upstreamSent += 1
        }
        log("sent \(Self.poisonUpstreamPayloads.count + Self.poisonUpstreamUnrecoverable.count) poison upstream messages", connection: connection.id)
    }
}

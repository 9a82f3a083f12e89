import Dispatch
import Glibc
import Synchronization

/// A TLS connection on a non-blocking socket, confined to its `EventLoop`: call every method on the loop;
/// the delegate is called on the loop.
///
/// Direct TLS from the first byte (no STARTTLS; ccs-protocol.md §1). Ciphertext moves between the socket and a
/// `TLSEngine`'s memory BIOs: each readiness event reads at most 64 KiB from the socket, decrypts all of it
/// and hands the plaintext to the delegate (in calls of up to 64 KiB) before looking at EOF, so a peer that
/// closes right after sending still gets its data delivered first. Unsent ciphertext waits in an outbound
/// buffer while the socket is not writable, with the write source armed only then.
///
/// Lifetime: an open connection keeps itself alive (its Dispatch sources hold it) until it closes;
/// after `didCloseWith` it holds no socket, no SSL object and no timer.
public final class TLSConnection {
    private enum State: Equatable {
        case accepted      // server side, before the handshake starts
        case resolving
        case connecting
        case handshaking
        case ready
        case closing       // our close_notify queued; flushing, then waiting (bounded) for the peer's EOF
        case closed
    }

    /// Grace for a clean close to flush and hear the peer's EOF, in seconds.
    static let closeGraceSeconds: Double = 2
    private static let idCounter = Atomic<Int>(0)

    /// Process-unique, for logs.
    public let id: Int
    /// Receives this connection's events; held weakly.
    public weak var delegate: TLSConnectionDelegate?
    /// "host:port" as connected to ("[::1]:5235" for an IPv6 literal), or the peer's numeric address (server side).
    public let remoteDescription: String
    /// The loop this connection is confined to.
    public let eventLoop: EventLoop
    /// Client or server side.
    public let role: TLSEngine.Role
    /// The write bound, in bytes, from the configuration.
    public let maxBufferedWriteBytes: Int

    private let host: String
    private let port: Int
    private let clientConfiguration: TLSClientConfiguration?
    private let handshakeTimeout: Double
    private var context: TLSContext?

    // What every `write` touches is `@exclusivity(unchecked)`: a runtime exclusivity check per access cost
    // about 77 instructions, four per stanza written (`write` and `bufferedBytes`). The connection is
    // confined to its loop (every entry point checks it), and no access to these stays open across a call
    // that could reach them again: `ByteQueue.consume` and `appendInPlace` run closures that only encrypt,
    // send or take ciphertext, and the delegate is called only after them.
    @exclusivity(unchecked) private var state: State
    private var socket: SocketHandle?
    @exclusivity(unchecked) private var engine: TLSEngine?
    // written and not yet encrypted (before the handshake, or this loop turn)
    @exclusivity(unchecked) private var pendingPlaintext = ByteQueue()
    @exclusivity(unchecked) private var plaintextFlushScheduled = false
    @exclusivity(unchecked) private var outbound = ByteQueue()           // ciphertext the socket did not take yet
    private var timer: TimerHandle?              // connect, handshake or close-grace deadline
    private var candidates: [SocketAddress] = []
    private var connectingTo: SocketAddress?
    private var lastConnectError: String?
    @exclusivity(unchecked) private var wantsDrainNotification = false
    private var halfClosed = false
    private var corruptsNextRecord = false
    private var recordBytesLeft = 0             // with `splitsRecords`: bytes of the front record not yet sent

    /// Fault injection (the emulator's `split-records`): from now on each plaintext byte goes out as its own
    /// TLS record, and each record in its own `send()`. Default false. Call on the loop.
    public var splitsRecords = false

    /// Fault injection (the emulator's `corrupt-record`): flips one byte inside the encrypted body of the next
    /// TLS record this side sends, so the peer's record check fails (`bad_record_mac`, RFC 8446 §5.2).
    /// Call on the loop; the next `write` produces that record.
    public func corruptNextRecord() {
        eventLoop.preconditionInEventLoop()
        corruptsNextRecord = true
    }

    private init(loop: EventLoop, role: TLSEngine.Role, host: String, port: Int, remoteDescription: String,
                 clientConfiguration: TLSClientConfiguration?, handshakeTimeout: Double,
                 maxBufferedWriteBytes: Int, context: TLSContext?, state: State) {
        self.id = Self.idCounter.wrappingAdd(1, ordering: .relaxed).newValue
        self.eventLoop = loop
        self.role = role
        self.host = host
        self.port = port
        self.remoteDescription = remoteDescription
        self.clientConfiguration = clientConfiguration
        self.handshakeTimeout = handshakeTimeout
        self.maxBufferedWriteBytes = maxBufferedWriteBytes
        self.context = context
        self.state = state
    }

    // MARK: Public API

    /// Opens a client connection: resolves `host` with getaddrinfo (IPv4 and IPv6; off the loop), tries each
    /// address in turn with a non-blocking connect until one succeeds or `connectTimeout` seconds pass, then
    /// runs the TLS handshake (TLS ≥ 1.2, SNI = `host` per RFC 6066 §3 unless it is an IP literal; chain verified
    /// against `caFile` or the system store; `host` verified per RFC 6125, IP literals as IP addresses).
    ///
    /// Returns at once; the outcome arrives on `delegate`: `tlsConnectionDidBecomeReady`, or `didCloseWith` an
    /// error of kind `.configuration`, `.resolutionFailed`, `.connectFailed` (every address refused/unreachable),
    /// `.connectTimedOut`, `.handshakeTimedOut`, `.certificateVerificationFailed` or `.handshakeFailed`.
    /// Call on `loop`. `port` is a TCP port (1...65535).
    public static func connect(host: String, port: Int, configuration: TLSClientConfiguration, on loop: EventLoop,
                               delegate: TLSConnectionDelegate) -> TLSConnection {
        loop.preconditionInEventLoop()
        let connection = TLSConnection(
            loop: loop, role: .client, host: host, port: port,
            remoteDescription: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)",
            clientConfiguration: configuration, handshakeTimeout: configuration.handshakeTimeout,
            maxBufferedWriteBytes: configuration.maxBufferedWriteBytes, context: nil, state: .resolving)
        connection.delegate = delegate
        connection.startResolving()
        return connection
    }

    /// Queues plaintext for sending (before the handshake completes it waits, then goes first).
    /// - Throws: `.writeBufferFull` (nothing queued; `tlsConnectionDidDrainWrites` follows once the buffer is
    ///   below half) when `bufferedBytes + bytes.count` would exceed `maxBufferedWriteBytes`;
    ///   `.closed` after `close()`/`abort()` or once the connection closed.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        eventLoop.preconditionInEventLoop()
        switch state {
        case .closing, .closed:
            throw TLSError(.closed, host: host, reason: "write after the connection closed")
        case .accepted, .resolving, .connecting, .handshaking, .ready:
            break
        }
        guard bytes.count > 0 else { return }
        let buffered = bufferedBytes
        if buffered + bytes.count > maxBufferedWriteBytes {
            wantsDrainNotification = true
            throw TLSError(.writeBufferFull, host: host,
                           reason: "\(buffered) bytes buffered; \(bytes.count) more would exceed the bound of \(maxBufferedWriteBytes) bytes")
        }
        pendingPlaintext.append(bytes)
        // `bufferedBytes` asks the TLS engine for its pending ciphertext (a `BIO_ctrl` call, about 300
        // instructions); until a flush, nothing but this append changed it.
        var bufferedNow = buffered + bytes.count
        if state == .ready {
            if pendingPlaintext.count >= Self.coalesceBytes {
                // Bulk output goes to the socket at once, so the kernel's buffers fill before ours do
                // and `writeBufferFull` means the peer really is not reading.
                flushPendingPlaintext()
                bufferedNow = bufferedBytes
            } else if !plaintextFlushScheduled {
                // Coalesce: the small writes of this loop turn go out as few TLS records and one send().
                plaintextFlushScheduled = true
                let me = UncheckedSendable(self)
                eventLoop.execute { me.value.flushPendingPlaintext() }
            }
        }
        if bufferedNow > maxBufferedWriteBytes / 2 { wantsDrainNotification = true }
    }

    /// Plaintext held for the end of the loop turn before it is encrypted and sent at once: 4 KiB.
    ///
    /// Small, so that a burst (a turn that answers a read of 100 acks with 100 stanzas) leaves in pieces the
    /// peer starts on while this side writes the rest: both ends then work at the same time instead of in
    /// turns. With one piece per turn (64 KiB before) ccsd and the emulator alternated, each idle while the
    /// other handled the whole window, and a 1-connection flood ran at about 71,000 msgs/s (median of 6);
    /// with 4 KiB (about 18 stanzas or 28 acks per send) at about 110,000. 8 KiB gave 106,000, 2 KiB 90,000.
    static let coalesceBytes = 4 * 1024

    /// Encrypts the plaintext queued by `write` and hands it to the socket.
    private func flushPendingPlaintext() {
        plaintextFlushScheduled = false
        guard state == .ready || state == .closing, !pendingPlaintext.isEmpty, let engine else { return }
        var failure: TLSError?
        pendingPlaintext.consume { bytes in
            do throws(TLSError) { try encrypt(bytes, with: engine) } catch { failure = error }
            return bytes.count
        }
        if let failure {
            finish(failure)
            return
        }
        collectCiphertext()
        flushOutbound(fromWritableEvent: false)
    }

    /// Encrypts `bytes` as one record per 16 KiB, or one record per byte with `splitsRecords`.
    private func encrypt(_ bytes: UnsafeRawBufferPointer, with engine: TLSEngine) throws(TLSError) {
        guard splitsRecords else { return try engine.writePlaintext(bytes) }
        for index in bytes.indices { try engine.writePlaintext(UnsafeRawBufferPointer(rebasing: bytes[index..<index + 1])) }
    }

    /// Queues `string` as UTF-8; see `write(_:)` for the errors.
    public func write(_ string: String) throws(TLSError) {
        var copy = string
        let result: Result<Void, TLSError> = copy.withUTF8 { utf8 in
            Result { () throws(TLSError) in try self.write(UnsafeRawBufferPointer(utf8)) }
        }
        try result.get()
    }

    /// Plaintext not yet encrypted plus ciphertext not yet taken by the socket, in bytes.
    public var bufferedBytes: Int {
        pendingPlaintext.count + outbound.count + (engine?.pendingCiphertextCount ?? 0)
    }

    /// Whether the handshake completed and the connection is not closing.
    public var isReady: Bool { state == .ready }

    /// Stops reading from the socket while true: inbound backpressure (TCP then slows the peer down).
    /// Ignored during the handshake and a close, which always read.
    public var isReadingPaused = false {
        didSet {
            eventLoop.preconditionInEventLoop()
            if state == .ready { socket?.setReadEnabled(!isReadingPaused) }
        }
    }

    /// The negotiated TLS version, e.g. "TLSv1.3"; nil before the handshake.
    public var negotiatedProtocol: String? { engine?.negotiatedProtocol }

    /// Clean close: flushes queued data, sends close_notify (RFC 8446 §6.1), half-closes TCP, waits for the
    /// peer's EOF, then closes the socket. Bounded by a 2 s grace. The delegate then gets `didCloseWith(nil)`,
    /// or `.closed` if the grace ran out before everything was sent. Before the handshake completed, this
    /// is `abort()` (queued plaintext is dropped). Idempotent.
    public func close() {
        eventLoop.preconditionInEventLoop()
        switch state {
        case .closing, .closed:
            return
        case .accepted, .resolving, .connecting, .handshaking:
            finish(nil)
        case .ready:
            beginClosing()
        }
    }

    /// Abrupt close: no close_notify, queued data dropped, socket closed at once (the peer sees TCP EOF
    /// without close_notify). The delegate gets `didCloseWith(nil)` since we chose to close. Idempotent.
    public func abort() {
        eventLoop.preconditionInEventLoop()
        finish(nil)
    }

    /// Abrupt close with a TCP reset: like `abort()`, but with `SO_LINGER` 0, so the peer's next read fails
    /// with ECONNRESET instead of seeing EOF. For fault injection (the emulator's `rst` fault). Idempotent.
    public func reset() {
        eventLoop.preconditionInEventLoop()
        if let fd = socket?.fd {
            var option = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        finish(nil)
    }

    // MARK: Client connect

    private func startResolving() {
        let timeout = clientConfiguration!.connectTimeout
        let host = host, port = port
        timer = eventLoop.schedule(after: timeout) { [weak self] in
            self?.finish(TLSError(.connectTimedOut, host: host, reason: "no TCP connection within \(timeout) s"))
        }
        do {
            context = try TLSContext.cachedClient(configuration: clientConfiguration!)
        } catch {
            finish(TLSError(error.kind, host: host, reason: error.reason))
            return
        }
        let me = UncheckedSendable(self), loop = eventLoop
        // getaddrinfo blocks: run it off the loop and come back with the addresses.
        DispatchQueue.global().async {
            let result: Result<[SocketAddress], TLSError>
            do throws(TLSError) { result = .success(try SocketAddress.resolve(host: host, port: port)) } catch { result = .failure(error) }
            loop.execute { me.value.resolved(result) }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], TLSError>) {
        guard state == .resolving else { return }  // closed or timed out meanwhile
        switch result {
        case .failure(let error):
            finish(error)
        case .success(let addresses):
            candidates = addresses
            state = .connecting
            tryNextAddress()
        }
    }

    private func tryNextAddress() {
        while !candidates.isEmpty {
            let address = candidates.removeFirst()
            let fd = SocketOptions.makeTCPSocket(family: address.family)
            if fd < 0 {
                lastConnectError = "\(address.description): socket: \(errnoText())"
                continue
            }
            SocketOptions.setInt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
            let error = errno
            if rc == 0 || error == EINPROGRESS {
                connectingTo = address
                install(SocketHandle(fd: fd, loop: eventLoop))
                if rc == 0 { tcpConnected() } else { socket!.setWriteEnabled(true) }
                return
            }
            _ = Glibc.close(fd)
            lastConnectError = "\(address.description): \(errnoText(error))"
        }
        finish(TLSError(.connectFailed, host: host, reason: lastConnectError ?? "no address to try"))
    }

    private func checkConnectResult() {
        guard let socket else { return }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(socket.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
        if error == 0 {
            socket.setWriteEnabled(false)
            tcpConnected()
            return
        }
        lastConnectError = "\(connectingTo?.description ?? "?"): \(errnoText(error))"
        socket.close()
        self.socket = nil
        tryNextAddress()
    }

    private func tcpConnected() {
        do {
            engine = try TLSEngine.client(context: context!, host: host)
        } catch {
            finish(error)
            return
        }
        beginHandshake()
    }

    // MARK: Server side

    /// A server-side connection on an accepted socket; `TLSServer` calls `startServerHandshake()` after `onAccept`.
    init(accepted fd: Int32, peer: SocketAddress, context: TLSContext, configuration: TLSServerConfiguration,
         loop: EventLoop) {
        let description = peer.description
        self.id = Self.idCounter.wrappingAdd(1, ordering: .relaxed).newValue
        self.eventLoop = loop
        self.role = .server
        self.host = description
        self.port = peer.port
        self.remoteDescription = description
        self.clientConfiguration = nil
        self.handshakeTimeout = configuration.handshakeTimeout
        self.maxBufferedWriteBytes = configuration.maxBufferedWriteBytes
        self.context = context
        self.state = .accepted
        SocketOptions.setInt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        self.socket = SocketHandle(fd: fd, loop: loop)
    }

    func startServerHandshake() {
        guard state == .accepted, let socket else { return }  // closed in onAccept
        install(socket)
        do {
            engine = try TLSEngine.server(context: context!, peerName: host)
        } catch {
            finish(error)
            return
        }
        beginHandshake()
    }

    // MARK: Handshake

    private func install(_ handle: SocketHandle) {
        socket = handle
        // Strong captures: an open connection keeps itself alive; SocketHandle.close() drops the handlers.
        handle.setHandlers(onReadable: { self.socketReadable() }, onWritable: { self.socketWritable() })
    }

    private func beginHandshake() {
        state = .handshaking
        timer?.cancel()
        let timeout = handshakeTimeout, host = host
        timer = eventLoop.schedule(after: timeout) { [weak self] in
            self?.finish(TLSError(.handshakeTimedOut, host: host, reason: "no TLS handshake within \(timeout) s"))
        }
        socket?.setReadEnabled(true)
        advanceHandshake()
    }

    private func advanceHandshake() {
        guard state == .handshaking, let engine else { return }
        let progress: TLSEngine.HandshakeProgress
        do {
            progress = try engine.handshake()
        } catch {
            collectCiphertext()
            flushOutbound(fromWritableEvent: false)  // best effort: the alert tells the peer why
            finish(error)
            return
        }
        collectCiphertext()
        flushOutbound(fromWritableEvent: false)
        guard state == .handshaking else { return }
        if progress == .complete { becomeReady() }
    }

    private func becomeReady() {
        timer?.cancel()
        timer = nil
        state = .ready
        if !pendingPlaintext.isEmpty, let engine {
            var failure: TLSError?
            pendingPlaintext.consume { bytes in
                do throws(TLSError) { try encrypt(bytes, with: engine) } catch { failure = error }
                return bytes.count
            }
            if let failure { finish(failure); return }
            collectCiphertext()
            flushOutbound(fromWritableEvent: false)
            guard state == .ready else { return }
        }
        socket?.setReadEnabled(!isReadingPaused)
        delegate?.tlsConnectionDidBecomeReady(self)
        // Application data may have arrived together with the handshake's last flight.
        if state == .ready { deliverPlaintext() }
    }

    // MARK: Reading

    /// Reads until the socket has nothing more (EAGAIN), EOF, or 64 KiB this turn. Reading to EAGAIN matters:
    /// libdispatch does not report a FIN that arrived together with data we already took, so a peer's close
    /// would otherwise go unnoticed. On the epoll loop (level-triggered) a short read could end the turn
    /// instead; measured paced at 80,000 msgs/s it saved about a quarter of ccsd's `recv` calls but cost
    /// both ccsd and the emulator CPU per message: a peer that reads on gets what arrived meanwhile in the
    /// same turn and answers it in one batch.
    private func socketReadable() {
        if state == .ready && isReadingPaused { return }
        var total = 0
        while let socket, total < EventLoop.readChunkSize {
            let buffer = UnsafeMutableRawBufferPointer(rebasing: eventLoop.readScratch[..<(EventLoop.readChunkSize - total)])
            let count = recv(socket.fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 {
                total += count
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                switch state {
                case .handshaking:
                    engine?.feedCiphertext(bytes)
                    advanceHandshake()
                case .ready:
                    engine?.feedCiphertext(bytes)
                    deliverPlaintext()
                    if isReadingPaused && state == .ready { return }
                case .closing, .accepted, .resolving, .connecting, .closed:
                    break  // after our close_notify, incoming data is discarded
                }
            } else if count == 0 {
                peerClosedTCP()
                return
            } else {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK { return }
                finish(TLSError(.connectionReset, host: host, reason: "recv: \(errnoText(error))"))
                return
            }
        }
        // Budget spent with data maybe left: come back after the other work queued on the loop (fairness),
        // without relying on the source firing again.
        if socket != nil {
            let me = UncheckedSendable(self)
            eventLoop.execute { me.value.socketReadable() }
        }
    }

    /// Decrypts everything buffered and delivers it in chunks of up to 64 KiB.
    private func deliverPlaintext() {
        guard let engine else { return }
        let buffer = eventLoop.plaintextScratch
        var filled = 0
        var peerClosed = false
        var failure: TLSError?
        reading: while true {
            let result: TLSEngine.ReadResult
            do {
                result = try engine.readPlaintext(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            } catch {
                failure = error
                break reading
            }
            switch result {
            case .bytes(let count):
                filled += count
                if filled == buffer.count {
                    delegate?.tlsConnection(self, didReceive: UnsafeRawBufferPointer(buffer))
                    filled = 0
                    guard state == .ready else { return }
                }
            case .wantRead:
                break reading
            case .closeNotify:
                peerClosed = true
                break reading
            }
        }
        if filled > 0 {
            delegate?.tlsConnection(self, didReceive: UnsafeRawBufferPointer(rebasing: buffer[..<filled]))
            guard state == .ready else { return }
        }
        collectCiphertext()  // e.g. a TLS 1.3 KeyUpdate answer or an alert
        flushOutbound(fromWritableEvent: false)
        if let failure {
            finish(failure)
        } else if peerClosed, state == .ready {
            beginClosing()  // answer close_notify with ours, then close
        }
    }

    private func peerClosedTCP() {
        switch state {
        case .handshaking:
            finish(TLSError(.handshakeFailed, host: host, reason: "peer closed the connection during the TLS handshake"))
        case .ready:
            if engine?.receivedCloseNotify == true {
                finish(nil)
            } else {
                finish(TLSError(.connectionReset, host: host, reason: "peer closed the connection without TLS close_notify"))
            }
        case .closing:
            if outbound.isEmpty {
                finish(nil)
            } else {
                finish(TLSError(.connectionReset, host: host, reason: "peer closed with \(outbound.count) bytes unsent"))
            }
        case .accepted, .resolving, .connecting, .closed:
            finish(nil)
        }
    }

    // MARK: Writing

    private func collectCiphertext() {
        guard let engine, engine.pendingCiphertextCount > 0 else { return }
        outbound.appendInPlace { buffer in
            let start = buffer.count
            engine.takeCiphertext(appendingTo: &buffer)
            // Ciphertext is taken whole, so `start` is a record header (5 bytes, RFC 8446 §5.1): flip the
            // first byte of that record's encrypted body.
            if corruptsNextRecord, buffer.count > start + 5 {
                corruptsNextRecord = false
                buffer[start + 5] ^= 0xFF
            }
        }
    }

    private func socketWritable() {
        switch state {
        case .connecting:
            checkConnectResult()
        case .handshaking, .ready, .closing:
            flushOutbound(fromWritableEvent: true)
        case .accepted, .resolving, .closed:
            socket?.setWriteEnabled(false)
        }
    }

    /// Sends as much of `outbound` as the socket takes; arms the write source for the rest.
    private func flushOutbound(fromWritableEvent: Bool) {
        guard let socket else { return }
        var fullyFlushed = true
        while !outbound.isEmpty {
            var error: Int32 = 0
            var sent = 0
            outbound.consume { bytes in
                var length = bytes.count
                if splitsRecords {
                    // One record per send(): the front record's length is in its header (RFC 8446 §5.1).
                    if recordBytesLeft == 0, bytes.count >= 5 {
                        recordBytesLeft = 5 + (Int(bytes[3]) << 8 | Int(bytes[4]))
                    }
                    if recordBytesLeft > 0 { length = min(length, recordBytesLeft) }
                }
                let n = send(socket.fd, bytes.baseAddress, length, Int32(MSG_NOSIGNAL))
                if n < 0 { error = errno; return 0 }
                if splitsRecords, recordBytesLeft > 0 { recordBytesLeft -= n }
                sent = n
                return n
            }
            if sent > 0 || error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                fullyFlushed = false
                break
            }
            finish(TLSError(.connectionReset, host: host, reason: "send: \(errnoText(error))"))
            return
        }
        socket.setWriteEnabled(!fullyFlushed)
        if wantsDrainNotification, state == .ready, bufferedBytes < maxBufferedWriteBytes / 2 {
            wantsDrainNotification = false
            if fromWritableEvent {
                delegate?.tlsConnectionDidDrainWrites(self)
            } else {
                // Never call back into the delegate from inside its own write().
                let me = UncheckedSendable(self)
                eventLoop.execute {
                    let connection = me.value
                    if connection.state == .ready { connection.delegate?.tlsConnectionDidDrainWrites(connection) }
                }
            }
        }
        if fullyFlushed, state == .closing, !halfClosed {
            halfClosed = true
            if Glibc.shutdown(socket.fd, Int32(SHUT_WR)) != 0 { finish(nil) }
        }
    }

    // MARK: Closing

    private func beginClosing() {
        flushPendingPlaintext()  // what was written before close() goes out before close_notify
        guard state == .ready else { return }  // that flush failed and already finished the connection
        state = .closing
        timer?.cancel()
        timer = eventLoop.schedule(after: Self.closeGraceSeconds) { [weak self] in self?.closeGraceExpired() }
        engine?.shutdown()
        collectCiphertext()
        socket?.setReadEnabled(true)  // to see the peer's EOF even if reading was paused
        flushOutbound(fromWritableEvent: false)
    }

    private func closeGraceExpired() {
        guard state == .closing else { return }
        if outbound.isEmpty {
            finish(nil)
        } else {
            finish(TLSError(.closed, host: host,
                            reason: "clean close gave up after \(Self.closeGraceSeconds) s with \(outbound.count) bytes unsent"))
        }
    }

    /// Releases everything and tells the delegate, once, on a later loop turn.
    private func finish(_ error: TLSError?) {
        guard state != .closed else { return }
        state = .closed
        timer?.cancel()
        timer = nil
        socket?.close()
        socket = nil
        engine = nil
        context = nil
        outbound.removeAll()
        pendingPlaintext.removeAll()
        candidates = []
        let me = UncheckedSendable(self)
        eventLoop.execute {
            let connection = me.value
            connection.delegate?.tlsConnection(connection, didCloseWith: error)
        }
    }
}

import CMicroHTTPD
import Dispatch
import FoundationEssentials
import TLS

/// An HTTP/1.1 server on an `EventLoop`, built on GNU libmicrohttpd (Debian's libmicrohttpd12, loaded with
/// dlopen by the first `start`, so that a process without the API never maps it nor GnuTLS): MHD runs
/// without a thread of its own (`MHD_USE_EPOLL`, external polling); a Dispatch read source on MHD's epoll
/// fd and a timer from `MHD_get_timeout` call `MHD_run` on the loop's queue, so every handler runs on the
/// loop (one event loop, no thread per connection). A handler answers now or later through its
/// `HTTPResponder`: a connection waiting for its answer is suspended (`MHD_suspend_connection`) and resumed
/// when the answer comes.
///
/// Limits (`Limits`): the body (413 `body_too_large` as soon as the declared `Content-Length` passes it; a
/// chunked body that passes it is discarded and answered 413 at its end), connections per listener, idle
/// seconds per connection (a suspended connection waits for its handler, not for this timeout), memory per
/// connection. A listener with a bearer token (TCP) answers 401 `unauthorized` before reading the body
/// unless `Authorization: Bearer TOKEN` matches (compared in constant time); the token is never logged.
///
/// Confined to the loop: call `start` and `stop` on it.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: every stored property is touched only on the loop.

    /// The server's limits.
    public struct Limits: Sendable, Equatable {
        /// Largest request body, bytes (docs/api.md: `--api-max-body-bytes`, default 4 MiB).
        public var maxBodyBytes: Int
        /// Connections at once per listener; more are refused by MHD.
        public var connectionLimit: Int
        /// Seconds a connection may stay idle (no bytes either way) before MHD closes it.
        public var connectionTimeoutSeconds: Int
        /// Memory MHD may use per connection for headers and buffers, bytes.
        public var connectionMemoryBytes: Int

        public init(maxBodyBytes: Int = 4 << 20, connectionLimit: Int = 256, connectionTimeoutSeconds: Int = 30,
                    connectionMemoryBytes: Int = 64 << 10) {
            self.maxBodyBytes = maxBodyBytes
            self.connectionLimit = connectionLimit
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.connectionMemoryBytes = connectionMemoryBytes
        }
    }

    /// Where the server listens.
    public enum Listener: Sendable, Equatable {
        /// A Unix socket the server binds at `path` (a stale socket there is removed), with `mode` and
        /// optionally `group`; removed again at `stop`. No token: the file's mode and group are the access control.
        case unixSocket(path: String, mode: mode_t = 0o660, group: String? = nil)
        /// A listening socket inherited from systemd (`sd_listen_fds`). A Unix-domain one needs no token (its
        /// file's mode is the access control); any other needs `bearerToken` (none given: every request is 401).
        case inherited(fd: Int32, bearerToken: String?)
        /// TCP on `host:port` (port 0: any free port; see `tcpPorts`); every request needs the bearer token.
        case tcp(host: String, port: UInt16, bearerToken: String)
    }

    /// Handles one request on the loop: answer through the responder, now or later.
    public typealias Handler = (HTTPRequest, HTTPResponder) -> Void

    private let loop: EventLoop
    private let limits: Limits
    private let handler: Handler
    private var daemons: [ListenerDaemon] = []

    /// The TCP ports bound, in the order of the `.tcp` listeners.
    public private(set) var tcpPorts: [UInt16] = []
    /// A short name per listener (socket path, `fd N`, `HOST:PORT`), for logs.
    public var listenerNames: [String] { daemons.map(\.name) }

    public init(loop: EventLoop, limits: Limits = Limits(), handler: @escaping Handler) {
        self.loop = loop
        self.limits = limits
        self.handler = handler
    }

    /// Binds (or takes) every listener and starts serving on the loop. Call on the loop, once.
    /// - Throws: `HTTPServerError` naming the listener that failed; the ones started before it are stopped.
    public func start(_ listeners: [Listener]) throws(HTTPServerError) {
        loop.preconditionInEventLoop()
        do throws(HTTPServerError) {
            for listener in listeners {
                let fd: Int32, name: String, token: String?, path: String?
                switch listener {
                case .unixSocket(let socketPath, let mode, let group):
                    fd = try ListeningSocket.unix(path: socketPath, mode: mode, group: group)
                    (name, token, path) = (socketPath, nil, socketPath)
                case .inherited(let inherited, let bearerToken):
                    ListeningSocket.setNonBlocking(inherited)
                    let unixDomain = ListeningSocket.isUnixDomain(inherited)
                    (fd, name, path) = (inherited, "fd \(inherited)", nil)
                    token = unixDomain ? nil : (bearerToken ?? "")
                case .tcp(let host, let port, let bearerToken):
                    let bound = try ListeningSocket.tcp(host: host, port: port)
                    tcpPorts.append(bound.port)
                    fd = bound.fd
                    name = host.contains(":") ? "[\(host)]:\(bound.port)" : "\(host):\(bound.port)"
                    (token, path) = (bearerToken, nil)
                }
                let daemon = ListenerDaemon(server: self, name: name, fd: fd, bearerToken: token, socketPath: path)
                daemons.append(daemon)
                try daemon.start(limits: limits, queue: loop.dispatchQueue)
            }
        } catch {
            stop()
            throw error
        }
    }

    /// Stops every listener: waiting requests are answered 503 `unavailable`, connections closed, the Unix
    /// socket file removed. Call on the loop. Idempotent.
    public func stop() {
        loop.preconditionInEventLoop()
        for daemon in daemons { daemon.stop() }
        daemons.removeAll()
    }

    /// Parses `HOST:PORT` for a `.tcp` listener (`[V6]:PORT` for an IPv6 literal; a bare `PORT` means
    /// 127.0.0.1). - Returns: nil when it is not of that shape or the port is not 0…65535.
    public static func parseHostPort(_ text: String) -> (host: String, port: UInt16)? { ListeningSocket.parseHostPort(text) }

    /// Requests waiting for their answer (suspended), on every listener.
    public var waitingRequests: Int { daemons.reduce(0) { $0 + $1.waiting.count } }

    fileprivate func dispatch(_ request: HTTPRequest, _ responder: HTTPResponder) { handler(request, responder) }
    fileprivate var maxBodyBytes: Int { limits.maxBodyBytes }
    fileprivate func later(_ work: @escaping () -> Void) {
        let bound = LoopBound(work, eventLoop: loop)
        loop.execute { bound.value() }
    }
}

/// One MHD daemon: one listening socket, its epoll source and timer.
private final class ListenerDaemon {
    unowned let server: HTTPServer
    let name: String
    let fd: Int32
    let bearerToken: [UInt8]?
    /// A listener that needs a token but was given none: every request is 401.
    let refusesAll: Bool
    let socketPath: String?
    var mhd: OpaquePointer?
    var source: (any DispatchSourceRead)?
    var timer: (any DispatchSourceTimer)?
    var runScheduled = false
    /// Requests suspended while their handler works, by identity.
    var waiting: [ObjectIdentifier: RequestState] = [:]

    init(server: HTTPServer, name: String, fd: Int32, bearerToken: String?, socketPath: String?) {
        self.server = server
        self.name = name
        self.fd = fd
        self.bearerToken = bearerToken.map { Array($0.utf8) }
        self.refusesAll = bearerToken?.isEmpty == true
        self.socketPath = socketPath
    }

    func start(limits: HTTPServer.Limits, queue: DispatchQueue) throws(HTTPServerError) {
        let flags = UInt32(MHD_USE_EPOLL.rawValue) | UInt32(MHD_ALLOW_SUSPEND_RESUME.rawValue)
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let mhd = ccsd_mhd_start(flags, fd, accessHandler, context, requestCompleted, context,
                                       UInt32(limits.connectionLimit), UInt32(limits.connectionTimeoutSeconds),
                                       limits.connectionMemoryBytes) else {
            close(fd)
            if let socketPath { unlink(socketPath) }
            // The library is loaded by the first start (dlopen): a missing one is named, with dlerror's text.
            let reason = ccsd_mhd_load().map { String(cString: $0) } ?? "libmicrohttpd could not start on this socket"
            throw HTTPServerError(listener: name, reason: reason)
        }
        self.mhd = mhd
        let epoll = ccsd_mhd_epoll_fd(mhd)
        let source = DispatchSource.makeReadSource(fileDescriptor: epoll, queue: queue)
        source.setEventHandler { [weak self] in self?.run() }
        source.resume()
        self.source = source
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.run() }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
        self.timer = timer
        run()
    }

    /// One MHD turn: accept, read, call handlers, write, close; then re-arm the timer.
    func run() {
        runScheduled = false
        guard let mhd else { return }
        _ = ccsd_mhd_run(mhd)
        let milliseconds = ccsd_mhd_timeout_ms(mhd)
        timer?.schedule(deadline: milliseconds < 0 ? .distantFuture : .now() + .milliseconds(Int(min(milliseconds, 86_400_000))))
    }

    /// A run on a later loop turn (never re-entering `MHD_run`).
    func scheduleRun() {
        guard !runScheduled else { return }
        runScheduled = true
        server.later { [weak self] in self?.run() }
    }

    func stop() {
        guard let mhd else { return }
        // Waiting requests get their answer, so that MHD holds no suspended connection when it stops.
        for state in Array(waiting.values) {
            state.responder?.respond(.error(503, code: "unavailable", message: "ccsd is stopping", headers: [("Retry-After", "1")]))
        }
        _ = ccsd_mhd_run(mhd)
        source?.cancel()
        timer?.cancel()
        ccsd_mhd_stop_daemon(mhd)
        self.mhd = nil
        close(fd)
        if let socketPath { unlink(socketPath) }
    }

    /// Whether the request carries this listener's bearer token (always true without a token).
    func authorized(_ connection: OpaquePointer) -> Bool {
        guard let expected = bearerToken else { return true }
        if refusesAll { return false }
        guard let value = ccsd_mhd_lookup_connection_value(connection, .HEADER_KIND, "Authorization") else { return false }
        let header = String(cString: value)
        guard header.count > 7, header.prefix(7).lowercased() == "bearer " else { return false }
        let given = Array(header.dropFirst(7).utf8)
        // Constant time in the token's content: every byte of the longer one is compared.
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<max(given.count, expected.count) {
            let a = index < given.count ? given[index] : 0
            let b = index < expected.count ? expected[index] : 0
            difference |= a ^ b
        }
        return difference == 0
    }
}

/// What the server keeps per request between MHD's calls.
private final class RequestState {
    var body = Data()
    var tooLarge = false
    var dispatched = false
    var suspended = false
    var finished = false
    var response: HTTPResponse?
    var responder: HTTPResponder?
}

/// Queues `response` on `connection` (MHD copies the body).
private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    let made: OpaquePointer? = response.body.withUnsafeBytes { bytes in
        ccsd_mhd_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), MHD_ResponseMemoryMode(rawValue: 2)!)
    }
    guard let made else { return .NO }
    for (name, value) in response.headers { _ = ccsd_mhd_add_response_header(made, name, value) }
    let result = ccsd_mhd_queue_response(connection, UInt32(response.status), made)
    ccsd_mhd_destroy_response(made)
    return result
}

private final class ValueBox {
    var values: [String: String] = [:]
    let lowercased: Bool
    init(lowercased: Bool) { self.lowercased = lowercased }
}

private func values(of connection: OpaquePointer, kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
    let box = ValueBox(lowercased: lowercased)
    let iterator: MHD_KeyValueIterator = { context, _, key, value in
        let box = Unmanaged<ValueBox>.fromOpaque(context!).takeUnretainedValue()
        if let key {
            let name = String(cString: key)
            box.values[box.lowercased ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
        }
        return .YES
    }
    withExtendedLifetime(box) {
        _ = ccsd_mhd_get_connection_values(connection, kind, iterator, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.values
}

/// MHD's access handler: called on the first headers, for each piece of body, and once more at the end
/// (and again after a resume, to queue the answer).
private let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, requestContext in
    guard let context, let connection, let requestContext, let uploadSize else { return .NO }
    let daemon = Unmanaged<ListenerDaemon>.fromOpaque(context).takeUnretainedValue()
    guard let stored = requestContext.pointee else {
        // First call: headers only. Refuse early what must not be read.
        let state = RequestState()
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        if !daemon.authorized(connection) {
            return queue(.error(401, code: "unauthorized", message: "this listener needs Authorization: Bearer TOKEN",
                                headers: [("WWW-Authenticate", "Bearer")]), on: connection)
        }
        if let declared = ccsd_mhd_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
           let length = Int(String(cString: declared)), length > daemon.server.maxBodyBytes {
            return queue(tooLarge(daemon.server.maxBodyBytes), on: connection)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(stored).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        if !state.tooLarge, let uploadData {
            if state.body.count + uploadSize.pointee > daemon.server.maxBodyBytes {
                state.tooLarge = true
                state.body = Data()
            } else {
                state.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    if let response = state.response {
        return queue(response, on: connection)
    }
    if state.tooLarge { return queue(tooLarge(daemon.server.maxBodyBytes), on: connection) }
    guard !state.dispatched else { return .YES }
    state.dispatched = true
    let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                              query: values(of: connection, kind: .GET_ARGUMENT_KIND, lowercased: false),
                              headers: values(of: connection, kind: .HEADER_KIND, lowercased: true),
                              body: state.body, listener: daemon.name)
    state.body = Data()
    let identity = ObjectIdentifier(state)
    let responder = HTTPResponder { [weak daemon, weak state] response in
        guard let daemon, let state, !state.finished else { return }
        state.response = response
        state.responder = nil
        if state.suspended {
            state.suspended = false
            daemon.waiting[identity] = nil
            ccsd_mhd_resume_connection(connection)
            daemon.scheduleRun()
        }
    }
    state.responder = responder
    daemon.server.dispatch(request, responder)
    if let response = state.response {
        return queue(response, on: connection)
    }
    state.suspended = true
    daemon.waiting[identity] = state
    ccsd_mhd_suspend_connection(connection)
    return .YES
}

private func tooLarge(_ limit: Int) -> HTTPResponse {
    .error(413, code: "body_too_large", message: "the body is over the limit of \(limit) bytes (--api-max-body-bytes)")
}

/// MHD is done with a request: release its state.
private let requestCompleted: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let requestContext, let stored = requestContext.pointee else { return }
    let state = Unmanaged<RequestState>.fromOpaque(stored).takeRetainedValue()
    state.finished = true
    state.responder = nil
    if let context {
        Unmanaged<ListenerDaemon>.fromOpaque(context).takeUnretainedValue().waiting[ObjectIdentifier(state)] = nil
    }
    requestContext.pointee = nil
}

import Foundation
import Glibc
import TLS

/// A delegate that records events (optionally echoing data back, or pausing reads once ready).
final class Recorder: TLSConnectionDelegate, @unchecked Sendable {
    // @unchecked Sendable: the options are set before use; callbacks run on the loop; `log` is thread-safe.
    let log = EventLog()
    var echo: Bool
    var pauseReadingWhenReady: Bool

    init(echo: Bool = false, pauseReadingWhenReady: Bool = false) {
        self.echo = echo
        self.pauseReadingWhenReady = pauseReadingWhenReady
    }

    func tlsConnectionDidBecomeReady(_ connection: TLSConnection) {
        if pauseReadingWhenReady { connection.isReadingPaused = true }
        log.append(.ready)
    }

    func tlsConnection(_ connection: TLSConnection, didReceive bytes: UnsafeRawBufferPointer) {
        if echo { try? connection.write(bytes) }
        log.append(.data(Array(bytes)))
    }

    func tlsConnectionDidDrainWrites(_ connection: TLSConnection) { log.append(.drained) }

    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TLSError?) { log.append(.closed(error)) }
}

/// A TLSServer on the loop whose accepted connections all report to one `Recorder`.
final class ServerHarness: @unchecked Sendable {
    // @unchecked Sendable: `server` and `connections` are touched only on `loop`.
    let loop: EventLoop
    let recorder: Recorder
    let port: Int
    private var server: TLSServer?
    private var connections: [TLSConnection] = []

    init(loop: EventLoop, configuration: TLSServerConfiguration, host: String = "127.0.0.1", recorder: Recorder) throws {
        self.loop = loop
        self.recorder = recorder
        let pending = PendingSelf()
        let server = try loop.submitAndWait { () throws -> TLSServer in
            try TLSServer(host: host, configuration: configuration, on: loop) { connection in
                connection.delegate = recorder
                pending.harness?.connections.append(connection)
            }
        }
        self.port = server.port
        self.server = server
        pending.harness = self
    }

    private final class PendingSelf: @unchecked Sendable { weak var harness: ServerHarness? }

    /// The accepted connections so far; on the loop.
    var accepted: [TLSConnection] {
        loop.preconditionInEventLoop()
        return connections
    }

    func stop() {
        loop.submitAndWait {
            server?.close()
            server = nil
            for connection in connections { connection.abort() }
        }
    }
}

/// Connects a client on `loop` reporting to `recorder`.
func connectClient(_ loop: EventLoop, host: String, port: Int, configuration: TLSClientConfiguration,
                   recorder: Recorder) async throws -> LoopBound<TLSConnection> {
    try await loop.submit {
        LoopBound(TLSConnection.connect(host: host, port: port, configuration: configuration, on: loop, delegate: recorder),
                  eventLoop: loop)
    }
}

/// Whether this machine can listen on ::1.
func loopbackIPv6Available() -> Bool {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    } == 0
}

/// A plain TCP listener on 127.0.0.1 that never accepts nor answers (the kernel completes TCP connects).
final class SilentListener {
    let fd: Int32
    let port: Int

    /// `backlog` 0 lets the kernel queue one or two connections; further SYNs are dropped while nobody accepts.
    init(backlog: Int32 = 8) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, backlog) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { close(fd); throw TimedOut(what: "silent listener setup", events: []) }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// Starts a non-blocking TCP connect to 127.0.0.1:`port` and returns the socket (close it when done).
func startPlainConnect(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return fd
}

import Dispatch
import Glibc

/// The line-based control channel of `ccs-emulator`: a plain TCP listener (no TLS; bind it to
/// loopback) that takes one command per line and answers one JSON line, via `CCSEmulator.handle(commandLine:)`.
///
/// Lines are capped at 64 KiB (longer: an error line, then the connection is closed); answers are written
/// with a 2 s send timeout. Runs on its own serial queue; the emulator's commands hop onto its loop.
public final class ControlChannel: @unchecked Sendable {
    // @unchecked Sendable: every mutable property is touched only on `queue`.
    /// The bound port (the ephemeral one if 0 was asked for).
    public let port: Int
    private let queue = DispatchQueue(label: "ccs-emulator.control")
    private let listener: Int32
    private let acceptSource: DispatchSourceRead
    private var clients: [Int32: (source: DispatchSourceRead, buffer: [UInt8])] = [:]
    private let emulator: CCSEmulator
    static let maxLineBytes = 64 * 1024

    /// Listens on `host` (numeric IPv4, default 127.0.0.1) : `port` (0 = ephemeral).
    /// - Throws: `EmulatorError.startFailed` when the address cannot be bound.
    public init(host: String = "127.0.0.1", port: Int, emulator: CCSEmulator) throws(EmulatorError) {
        self.emulator = emulator
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw EmulatorError(.startFailed, "control socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            Glibc.close(fd)
            throw EmulatorError(.startFailed, "control host \(host) is not a numeric IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let text = String(cString: strerror(errno))
            Glibc.close(fd)
            throw EmulatorError(.startFailed, "cannot listen for control on \(host):\(port): \(text)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = fd
        acceptSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        acceptSource.setEventHandler { [weak self] in self?.acceptClients() }
        acceptSource.setCancelHandler { Glibc.close(fd) }
        acceptSource.resume()
    }

    /// Stops listening and drops every control connection. Idempotent.
    public func close() {
        queue.sync {
            guard !acceptSource.isCancelled else { return }
            acceptSource.cancel()
            for client in clients.values { client.source.cancel() }
            clients = [:]
        }
    }

    private func acceptClients() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [weak self] in self?.readable(fd) }
            source.setCancelHandler { Glibc.close(fd) }
            clients[fd] = (source, [])
            source.resume()
        }
    }

    private func readable(_ fd: Int32) {
        guard var client = clients[fd] else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
            drop(fd)
            return
        }
        guard count > 0 else { return }
        client.buffer += chunk[0..<count]
        while let newline = client.buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: client.buffer[..<newline], as: UTF8.self)
            client.buffer.removeSubrange(...newline)
            if line.allSatisfy({ $0 == " " || $0 == "\r" || $0 == "\t" }) { continue }
            reply(emulator.handle(commandLine: line) + "\n", to: fd)
        }
        if client.buffer.count > Self.maxLineBytes {
            reply(CCSEmulator.failure("line longer than \(Self.maxLineBytes) bytes") + "\n", to: fd)
            drop(fd)
            return
        }
        clients[fd] = client
    }

    private func reply(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return }
            offset += written
        }
    }

    private func drop(_ fd: Int32) {
        clients.removeValue(forKey: fd)?.source.cancel()
    }
}

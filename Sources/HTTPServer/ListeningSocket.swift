import FoundationEssentials
import Glibc

/// Listening sockets for the HTTP server: a Unix socket it binds itself, or TCP on `HOST:PORT`.
enum ListeningSocket {
    /// Binds a Unix stream socket at `path` and listens: a stale socket file there is removed first (any other
    /// kind of file is refused), the socket gets `mode` and, with `group`, that group (chown).
    /// - Returns: the listening descriptor (non-blocking, close-on-exec).
    /// - Throws: `HTTPServerError` naming `path` and the failed step.
    static func unix(path: String, mode: mode_t, group: String?) throws(HTTPServerError) -> Int32 {
        func failure(_ step: String, _ code: Int32 = errno) -> HTTPServerError {
            HTTPServerError(listener: path, reason: "\(step): \(String(cString: strerror(code)))")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw HTTPServerError(listener: path, reason: "a Unix socket path must be 1 to \(capacity - 1) bytes long")
        }
        var gid: gid_t?
        if let group {
            guard let entry = getgrnam(group) else {
                throw HTTPServerError(listener: path, reason: "no such group \"\(group)\" (--api-socket-group)")
            }
            gid = entry.pointee.gr_gid
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw HTTPServerError(listener: path, reason: "exists and is not a socket; not removing it")
            }
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        if info.st_mode & S_IFMT == S_IFSOCK {
            // Stale only when nobody accepts on it: a socket another process listens on is left to it.
            guard !accepts(address) else {
                throw HTTPServerError(listener: path, reason: "another process is listening on this socket; not removing it")
            }
            guard unlink(path) == 0 else { throw failure("removing the stale socket") }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw failure("bind", code)
        }
        guard chmod(path, mode) == 0 else {
            let code = errno
            close(fd)
            unlink(path)
            throw failure("chmod", code)
        }
        if let gid, chown(path, uid_t.max, gid) != 0 {
            let code = errno
            close(fd)
            unlink(path)
            throw failure("chown to group \(group ?? "")", code)
        }
        return try listen(fd, name: path)
    }

    /// Whether a process listens on the Unix socket at `address`: a non-blocking connect succeeds, or finds its
    /// backlog full (EAGAIN); a stale socket file refuses (ECONNREFUSED).
    private static func accepts(_ address: sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        var address = address
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0 || errno == EAGAIN
    }

    /// Parses `HOST:PORT` (`[V6]:PORT` for an IPv6 literal; a bare `PORT` means loopback, 127.0.0.1).
    /// - Returns: nil when it is not of that shape or the port is not 0…65535.
    static func parseHostPort(_ text: String) -> (host: String, port: UInt16)? {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = UInt16(portText) else { return nil }
        return (host, port)
    }

    /// Binds TCP on `host:port` (a numeric address or a name resolving to one; port 0 picks a free port) and
    /// listens. - Returns: the descriptor and the port bound. - Throws: `HTTPServerError`.
    static func tcp(host: String, port: UInt16) throws(HTTPServerError) -> (fd: Int32, port: UInt16) {
        let name = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw HTTPServerError(listener: name, reason: "cannot resolve the host: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError(listener: name, reason: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            close(fd)
            throw HTTPServerError(listener: name, reason: "bind: \(String(cString: strerror(code)))")
        }
        let listening = try listen(fd, name: name)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = storage.ss_family
        let bound: UInt16 = withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (listening, bound)
    }

    /// Whether `fd` is a Unix-domain socket (an inherited socket: no token on it).
    static func isUnixDomain(_ fd: Int32) -> Bool {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return ok == 0 && storage.ss_family == sa_family_t(AF_UNIX)
    }

    private static func listen(_ fd: Int32, name: String) throws(HTTPServerError) -> Int32 {
        guard Glibc.listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw HTTPServerError(listener: name, reason: "listen: \(String(cString: strerror(code)))")
        }
        setNonBlocking(fd)
        return fd
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }
}

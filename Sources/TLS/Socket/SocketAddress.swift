import Glibc

/// One resolved socket address (IPv4 or IPv6), copyable and Sendable.
struct SocketAddress: @unchecked Sendable {
    // @unchecked Sendable: plain bytes of a sockaddr_storage, no pointers.
    var storage = sockaddr_storage()
    var length: socklen_t = 0

    var family: Int32 { Int32(storage.ss_family) }

    init() {}

    init(copying address: UnsafePointer<sockaddr>, length: socklen_t) {
        self.length = length
        withUnsafeMutableBytes(of: &storage) { dest in
            dest.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// "192.0.2.1:5235" or "[2001:db8::1]:5235".
    var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withSockaddr { address, length in
            getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                        NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard rc == 0 else { return "?" }
        let h = cText(host), s = cText(service)
        return family == AF_INET6 ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    /// The port, host byte order.
    var port: Int {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// Resolves `host`:`port` for TCP with getaddrinfo (blocking: call off the loop), IPv4 and IPv6 in
    /// the resolver's preferred order.
    /// - Throws: `.resolutionFailed` with gai_strerror's text.
    static func resolve(host: String, port: Int, passive: Bool = false, numericOnly: Bool = false) throws(TLSError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) | (numericOnly ? AI_NUMERICHOST : 0)
        if !numericOnly { hints.ai_flags |= AI_ADDRCONFIG }
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            throw TLSError(.resolutionFailed, host: host, reason: text)
        }
        defer { freeaddrinfo(first) }
        var result: [SocketAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr,
               current.pointee.ai_family == AF_INET || current.pointee.ai_family == AF_INET6 {
                result.append(SocketAddress(copying: address, length: current.pointee.ai_addrlen))
            }
            node = current.pointee.ai_next
        }
        if result.isEmpty { throw TLSError(.resolutionFailed, host: host, reason: "no IPv4 or IPv6 address") }
        return result
    }
}

/// errno as text.
func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// A NUL-terminated C character array as a String.
func cText(_ chars: [CChar]) -> String {
    String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

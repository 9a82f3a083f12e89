import CCSEmulator
import Foundation
import Glibc
import Testing

/// The plain-TCP control channel answers one JSON line per command line.
@Suite struct EmulatorControlChannelTests {
    @Test func commandLinesGetJSONLines() async throws {
        let harness = try EmulatorHarness()
        defer { harness.shutdown() }
        let channel = try ControlChannel(port: 0, emulator: harness.emulator)
        defer { channel.close() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(channel.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        let request = Array("stats\r\nbogus\n".utf8)
        #expect(request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } == request.count)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.filter({ $0 == UInt8(ascii: "\n") }).count < 2 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += chunk[0..<n]
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        try #require(lines.count == 2)
        #expect(lines[0].hasPrefix(#"{"ok":true,"stats":{"connections_accepted":0"#))
        #expect(lines[1].hasPrefix(#"{"ok":false,"error":"unknown command bogus"#))
    }
}

import Foundation
import Glibc
import Testing
@testable import TLS

/// The record-level fault hooks of a server-side `TLSConnection`, seen from a raw client: a blocking socket
/// driving a `TLSEngine`, so the test reads the records exactly as they came off the wire.
@Suite struct TLSFaultInjectionTests {
    /// A connected raw client: socket plus engine, handshake done.
    struct RawClient {
        let fd: Int32
        let engine: TLSEngine

        init(port: Int, fixtures: Fixtures) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            self.fd = fd
            self.engine = try TLSEngine.client(context: .client(configuration: fixtures.client()), host: "localhost")
            guard connected == 0 else { throw TimedOut(what: "connect to 127.0.0.1:\(port)", events: []) }
            for _ in 0..<50 {
                let progress = try engine.handshake()
                sendAll(engine.takeCiphertext())
                if progress == .complete { return }
                let bytes = receive()
                guard !bytes.isEmpty else { throw TimedOut(what: "the TLS handshake", events: []) }
                engine.feedCiphertext(bytes)
            }
            throw TimedOut(what: "the TLS handshake in 50 rounds", events: [])
        }

        func sendAll(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                offset += n
            }
        }

        /// One recv (at most 64 KiB); empty on EOF, error or the 5 s timeout.
        func receive() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? Array(buffer[..<n]) : []
        }

        /// Reads until `count` plaintext bytes decrypted (or the engine fails); returns them and the raw wire bytes.
        func read(plaintext count: Int) throws -> (plaintext: [UInt8], wire: [UInt8]) {
            var plaintext: [UInt8] = [], wire: [UInt8] = []
            for _ in 0..<1000 where plaintext.count < count {
                let bytes = receive()
                if bytes.isEmpty { break }
                wire += bytes
                engine.feedCiphertext(bytes)
                plaintext += try TLSEngineTests.readAll(engine).bytes
            }
            return (plaintext, wire)
        }

        /// The TLS records in `wire` (RFC 8446 §5.1): content type and length.
        static func records(_ wire: [UInt8]) -> [(type: UInt8, length: Int)] {
            var out: [(UInt8, Int)] = [], index = 0
            while index + 5 <= wire.count {
                let length = Int(wire[index + 3]) << 8 | Int(wire[index + 4])
                out.append((wire[index], length))
                index += 5 + length
            }
            return out
        }
    }

    @Test func splitRecordsSendsEachByteAsItsOwnRecord() async throws {
        let loop = EventLoop(label: "test.split")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder())
        defer { server.stop() }
        let client = try RawClient(port: server.port, fixtures: fixtures)
        defer { close(client.fd) }
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }
        try await loop.submit {
            let connection = server.accepted[0]
            connection.splitsRecords = true
            try connection.write("<message/>")
        }
        let (plaintext, wire) = try client.read(plaintext: 10)
        #expect(plaintext == Array("<message/>".utf8))
        // One plaintext byte per record: 1 byte, the inner content type and a 16-byte AEAD tag (RFC 8446 §5.2).
        let oneByteRecords = RawClient.records(wire).filter { $0.type == 23 && $0.length == 18 }
        #expect(oneByteRecords.count == 10)
    }

    @Test func corruptNextRecordFailsThePeersRecordCheck() async throws {
        let loop = EventLoop(label: "test.corrupt")
        let fixtures = try Fixtures.make()
        let server = try ServerHarness(loop: loop, configuration: fixtures.server, recorder: Recorder())
        defer { server.stop() }
        let client = try RawClient(port: server.port, fixtures: fixtures)
        defer { close(client.fd) }
        try await server.recorder.log.wait("server ready") { $0.contains(.ready) }
        try await loop.submit { try server.accepted[0].write("before") }
        #expect(try client.read(plaintext: 6).plaintext == Array("before".utf8))
        try await loop.submit {
            let connection = server.accepted[0]
            connection.corruptNextRecord()
            try connection.write("after")
        }
        #expect(throws: TLSError.self) { _ = try client.read(plaintext: 5) }
    }
}

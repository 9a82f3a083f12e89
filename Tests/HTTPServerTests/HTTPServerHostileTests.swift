import Foundation
import Testing
import TLS
@testable import HTTPServer

/// The HTTP server against careless neighbours and clients: a second server on the same socket path.
@Suite struct HTTPServerHostileTests {
    @Test func aSocketAnotherServerListensOnIsNeitherRemovedNorTaken() throws {
        let first = try HTTPServerTests.Running(listeners: { [.unixSocket(path: $0)] }, handler: HTTPServerTests.echo)
        defer { first.stop() }
        let before = try FileManager.default.attributesOfItem(atPath: first.socketPath)[.systemFileNumber] as? Int
        #expect(throws: HTTPServerError.self) {
            let second = try HTTPServerTests.Running(listeners: { _ in [.unixSocket(path: first.socketPath)] },
                                                     handler: HTTPServerTests.echo)
            second.stop()
        }
        // The first server keeps its socket file (same inode) and still answers on it.
        let after = try FileManager.default.attributesOfItem(atPath: first.socketPath)[.systemFileNumber] as? Int
        #expect(before != nil && before == after)
        #expect(try curl(["--unix-socket", first.socketPath, "http://localhost/"]).status == 200)
    }
}

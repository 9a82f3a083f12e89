import Foundation
import Testing
@testable import Daemon

/// The events outlet asks for a larger kernel buffer when its descriptor is a pipe (a flood's commit writes
/// tens of KiB at once), and leaves a regular file alone.
@Suite struct EventOutletPipeTests {
    /// `F_GETPIPE_SZ` (Linux), not imported into Swift.
    static let getPipeSize: Int32 = 1032

    @Test func aPipeGetsTheLargerBuffer() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        #expect(fcntl(ends[1], Self.getPipeSize) == 65_536)
        let outlet = try EventOutlet(path: "/proc/self/fd/\(ends[1])")
        #expect(fcntl(ends[0], Self.getPipeSize) == EventOutlet.pipeBytes)
        // Lines still arrive whole and in order.
        outlet.append(utf8: Array("{\"event\":\"accepted\"}\n".utf8))
        #expect(outlet.flush())
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(ends[0], &buffer, buffer.count)
        #expect(String(decoding: buffer[..<max(count, 0)], as: UTF8.self) == "{\"event\":\"accepted\"}\n")
    }

    @Test func aRegularFileIsLeftAlone() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outlet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let outlet = try EventOutlet(path: path)
        outlet.append(utf8: Array("{\"event\":\"accepted\"}\n".utf8))
        #expect(outlet.flush())
        #expect(FileManager.default.contents(atPath: path) == Data("{\"event\":\"accepted\"}\n".utf8))
    }
}

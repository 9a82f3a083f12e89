import Foundation
import Testing
@testable import Daemon

/// A crash can leave an events file's last line torn (the kernel ends a write early when the writer is
/// killed between two pages); the next run's outlet ends it with a line feed before writing, so the torn piece
/// stays a line of its own and the first line written after it stays whole.
@Suite struct EventOutletTornLineTests {
    func file(with contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outlet-torn-\(UUID().uuidString)").path
        try #require(FileManager.default.createFile(atPath: path, contents: Data(contents.utf8)))
        return path
    }

    func contents(after contents: String) throws -> String {
        let path = try file(with: contents)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let outlet = try EventOutlet(path: path)
        outlet.append(utf8: Array("{\"event\":\"accepted\",\"seq\":8}\n".utf8))
        #expect(outlet.flush())
        return String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    @Test func aTornLastLineIsEndedBeforeTheFirstWrite() throws {
        #expect(try contents(after: "{\"event\":\"acked\",\"seq\":6}\n{\"event\":\"ack")
                == "{\"event\":\"acked\",\"seq\":6}\n{\"event\":\"ack\n{\"event\":\"accepted\",\"seq\":8}\n")
    }

    @Test func aWholeOrEmptyFileGetsNothingMore() throws {
        #expect(try contents(after: "{\"event\":\"acked\",\"seq\":6}\n")
                == "{\"event\":\"acked\",\"seq\":6}\n{\"event\":\"accepted\",\"seq\":8}\n")
        #expect(try contents(after: "") == "{\"event\":\"accepted\",\"seq\":8}\n")
    }

    /// What `--events -` inherits as stdout: `descriptor` opened on a file with `flags` (`>> FILE` appends),
    /// read through `/proc/self/fd/N` as the outlet does for fd 1.
    func contents(after contents: String, openedWith flags: Int32) throws -> String {
        let path = try file(with: contents)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, flags)
        try #require(fd >= 0)
        EventOutlet.endTornLine(fd, path: "/proc/self/fd/\(fd)")
        close(fd)
        return String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    @Test func stdoutAppendedToAFileGetsItsTornLineEnded() throws {
        #expect(try contents(after: "{\"event\":\"ack", openedWith: O_WRONLY | O_APPEND) == "{\"event\":\"ack\n")
        #expect(try contents(after: "{\"seq\":6}\n", openedWith: O_WRONLY | O_APPEND) == "{\"seq\":6}\n")
    }

    @Test func stdoutAtTheStartOfAnOldFileIsLeftAlone() throws {
        // `1<> FILE`: the writes go from offset 0; a line feed there would overwrite the file's first byte.
        #expect(try contents(after: "{\"event\":\"ack", openedWith: O_WRONLY) == "{\"event\":\"ack")
    }
}

import CCS
import CCSEmulator
import Foundation
import Testing

/// The durable store through the real `ccsd` binary: `kill -9` and a restart with the same state directory,
/// and the store failures an operator meets, each with the exact error ccsd prints.
@Suite(.serialized) struct StoreProcessTests {
    static func lines(_ count: Int, prefix: String) -> [String] {
        (0..<count).map { #"{"to":"tok-\#($0)-APA91b","message_id":"\#(prefix)-\#($0)","data":{"n":"\#($0)"},"time_to_live":600}"# }
    }

    /// kill -9 while every message is in flight or queued: the restart with the same state directory sends
    /// each accepted message again with the same message_id, and `--exit-when-done` waits for all of them.
    @Test func killMinus9AndRestartResumesEveryAcceptedMessage() async throws {
        let first = try CCSDProcess(emulator: { $0.ackLatencyMilliseconds = 60_000 })
        defer { first.cleanUp() }
        #expect(produce(Self.lines(40, prefix: "k9"), into: first.fifoPath))
        await waitUntil("all accepted", timeout: 20) { first.events("accepted").count == 40 }
        #expect(first.stop(signal: SIGKILL) == nil)
        let accepted = Set(first.events("accepted").compactMap { $0["message_id"]?.stringValue })
        #expect(first.events.allSatisfy { $0["seq"]?.intValue != nil && $0["time"]?.stringValue != nil })

        let second = try CCSDProcess(input: "/dev/null",
                                     extraArguments: ["--exit-when-done", "--state-dir", first.directory + "/state"])
        defer { second.cleanUp() }
        #expect(second.waitForExit(timeout: 30) == 0, "log:\n\(second.log)")
        let acked = second.events("acked").compactMap { $0["message_id"]?.stringValue }
        #expect(Set(acked) == accepted && acked.count == accepted.count)
    }

    /// A corrupt database: exit 5 before any connection, naming the file and SQLite's message.
    @Test func aCorruptDatabaseExits5NamingTheFile() async throws {
        let state = NSTemporaryDirectory() + "ccsd-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: state + "/ccsd.sqlite3"))
        let ccsd = try CCSDProcess(input: "/dev/null", extraArguments: ["--exit-when-done", "--state-dir", state])
        defer { ccsd.cleanUp() }
        #expect(ccsd.waitForExit(timeout: 20) == 5, "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("ccsd: store \(state)/ccsd.sqlite3: "), "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("file is not a database (SQLITE_NOTADB)"), "log:\n\(ccsd.log)")
        #expect(ccsd.emulator.stats().authenticated == 0)
    }

    /// A second ccsd on the same state directory: refused (exit 5) with the lock file named; the first runs on.
    @Test func aSecondCCSDOnTheSameStateDirectoryIsRefused() async throws {
        let first = try CCSDProcess()
        defer { first.cleanUp() }
        await waitUntil("first ccsd logged in", timeout: 15) { first.emulator.stats().authenticated >= 1 }
        let second = try CCSDProcess(input: "/dev/null", extraArguments: ["--state-dir", first.directory + "/state"])
        defer { second.cleanUp() }
        #expect(second.waitForExit(timeout: 20) == 5, "log:\n\(second.log)")
        #expect(second.log.contains("ccsd: store \(first.directory)/state/ccsd.lock: locking the state directory failed: "),
                "log:\n\(second.log)")
        #expect(second.emulator.stats().authenticated == 0)
        #expect(first.isRunning)
        #expect(first.stop(signal: SIGTERM) == 0)
    }

    /// A read-only state directory (a tmpfs remounted read-only): exit 5 naming the path.
    @Test(.enabled(if: SmallTmpfs.isPermitted, "mounting a tmpfs needs root with CAP_SYS_ADMIN"))
    func aReadOnlyStateDirectoryExits5() async throws {
        let mount = try SmallTmpfs(size: "4m")
        try FileManager.default.createDirectory(atPath: mount.path + "/state", withIntermediateDirectories: false)
        try mount.remount(readOnly: true)
        let ccsd = try CCSDProcess(input: "/dev/null", extraArguments: ["--exit-when-done", "--state-dir", mount.path + "/state"])
        defer { ccsd.cleanUp() }
        #expect(ccsd.waitForExit(timeout: 20) == 5, "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("ccsd: store \(mount.path)/state/"), "log:\n\(ccsd.log)")
        #expect(ccsd.log.contains("Read-only file system"), "log:\n\(ccsd.log)")
        #expect(ccsd.emulator.stats().authenticated == 0)
    }

    /// A full disk: intake gets retryable rejections (the log names the file and SQLITE_FULL), nothing
    /// accepted is lost, and once there is room again ccsd takes messages and finishes every accepted one.
    @Test(.enabled(if: SmallTmpfs.isPermitted, "mounting a tmpfs needs root with CAP_SYS_ADMIN"))
    func aFullDiskRejectsRetryableAndLosesNothingAccepted() async throws {
        let mount = try SmallTmpfs(size: "8m")
        let state = mount.path + "/state"
        let ccsd = try CCSDProcess(extraArguments: ["--state-dir", state], emulator: { $0.ackLatencyMilliseconds = 5 })
        defer { ccsd.cleanUp() }
        await waitUntil("logged in", timeout: 15) { ccsd.emulator.stats().authenticated >= 1 }
        #expect(produce(Self.lines(5, prefix: "before"), into: ccsd.fifoPath))
        await waitUntil("acked", timeout: 15) { ccsd.events("acked").count == 5 }
        let filler = try mount.fill(leaving: 0)
        // Big messages fill what the WAL had left.
        let big = (0..<200).map { #"{"to":"tok-\#($0)-APA91b","message_id":"full-\#($0)","data":{"p":"\#(String(repeating: "x", count: 3000))"},"time_to_live":600}"# }
        #expect(produce(big, into: ccsd.fifoPath))
        await waitUntil("retryable rejections", timeout: 20) {
            ccsd.events("rejected").contains { $0["retryable"] == .bool(true) }
        }
        #expect(ccsd.log.contains("\(state)/ccsd.sqlite3") && ccsd.log.contains("SQLITE_FULL"), "log:\n\(ccsd.log)")
        try FileManager.default.removeItem(atPath: filler)
        await waitUntil("the store recovers", timeout: 40) { ccsd.log.contains("the store takes writes again") }
        #expect(produce(Self.lines(5, prefix: "after"), into: ccsd.fifoPath))
        await waitUntil("after acked", timeout: 20) {
            ccsd.events("acked").filter { ($0["message_id"]?.stringValue ?? "").hasPrefix("after-") }.count == 5
        }
        // Every accepted message was acked exactly once; every big one was accepted or rejected retryable.
        let accepted = ccsd.events("accepted").compactMap { $0["message_id"]?.stringValue }
        await waitUntil("every accepted one acked", timeout: 20) { ccsd.events("acked").count == accepted.count }
        let acked = ccsd.events("acked").compactMap { $0["message_id"]?.stringValue }
        #expect(Set(acked) == Set(accepted) && acked.count == accepted.count)
        let rejected = ccsd.events("rejected")
        #expect(rejected.allSatisfy { $0["retryable"] == .bool(true) })
        #expect(Set(accepted.filter { $0.hasPrefix("full-") }).count + rejected.count == 200)
        #expect(ccsd.stop(signal: SIGTERM) == 0, "log:\n\(ccsd.log)")
    }
}

/// A small tmpfs (the test container runs as root): a real full disk and a real read-only file system.
final class SmallTmpfs: @unchecked Sendable {
    let path: String
    private let parent = NSTemporaryDirectory() + "ccsd-tmpfs-\(UUID().uuidString)"

    static let isPermitted: Bool = {
        guard getuid() == 0, let probe = try? SmallTmpfs(size: "64k") else { return false }
        _ = probe
        return true
    }()

    init(size: String) throws {
        path = parent + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path) else {
            try? FileManager.default.removeItem(atPath: parent)
            throw POSIXError(.EPERM)
        }
    }

    func remount(readOnly: Bool) throws {
        guard Self.run("/bin/mount", "-o", readOnly ? "remount,ro" : "remount,rw", path) else { throw POSIXError(.EPERM) }
    }

    deinit {
        _ = Self.run("/bin/umount", path)
        try? FileManager.default.removeItem(atPath: parent)
    }

    /// Fills the file system with a file, leaving about `leaving` bytes free; returns the file's path.
    func fill(leaving: Int) throws -> String {
        let filler = path + "/filler"
        var info = statvfs()
        statvfs(path, &info)
        let size = max(0, Int(info.f_bavail) * Int(info.f_frsize) - leaving)
        guard FileManager.default.createFile(atPath: filler, contents: Data(count: size)) else { throw POSIXError(.ENOSPC) }
        return filler
    }

    @discardableResult
    static func run(_ arguments: String...) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

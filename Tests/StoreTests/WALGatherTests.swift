import CSQLite
import CSQLiteWALGather
import Foundation
import Testing
@testable import Store

/// The VFS that gathers a transaction's WAL writes (`CSQLiteWALGather`): what reaches the file, and when,
/// checked on the file through a separate descriptor (what the kernel has, what a `kill -9` leaves).
@Suite struct WALGatherTests {
    /// A WAL file opened through the VFS, its methods called the way SQLite's wal.c calls them.
    final class WALFile {
        let path: String
        let file: UnsafeMutablePointer<sqlite3_file>
        private let directory = TemporaryDirectory()

        init() throws {
            // The default VFS takes a WAL file's mode from its database file's: it must exist.
            let database = directory.path + "/db"
            #expect(FileManager.default.createFile(atPath: database, contents: nil))
            path = database + "-wal"
            var opened: UnsafeMutablePointer<sqlite3_file>?
            let rc = ccsd_wal_gather_open_for_testing(path, &opened)
            guard rc == SQLITE_OK, let opened else { throw StoreError(code: .other, path: path, operation: "open",
                                                                     message: "rc \(rc)") }
            file = opened
        }

        deinit { _ = ccsd_wal_gather_close_for_testing(file) }

        var methods: sqlite3_io_methods { file.pointee.pMethods.pointee }

        func write(_ bytes: [UInt8], at offset: Int64) {
            let rc = bytes.withUnsafeBytes { methods.xWrite(file, $0.baseAddress, Int32(bytes.count), offset) }
            #expect(rc == SQLITE_OK)
        }

        /// The file's bytes as another reader sees them (not through the VFS).
        var onDisk: [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

        /// Whether the file holds exactly `expected`; a failure names the size and the first differing byte.
        func holds(_ expected: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
            let bytes = onDisk
            let firstDifference = zip(bytes, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(bytes.count == expected.count && firstDifference == nil,
                    "the file has \(bytes.count) bytes, expected \(expected.count); first difference at \(firstDifference.map(String.init) ?? "none")",
                    sourceLocation: sourceLocation)
        }
    }

    static let pageSize = 512

    /// A frame header: bytes 4..7 are the database size after the commit on a commit frame, zero otherwise.
    static func frameHeader(page: UInt32, commitSize: UInt32) -> [UInt8] {
        var header = [UInt8](repeating: 0xA5, count: 24)
        for (i, value) in [page, commitSize].enumerated() {
            for byte in 0..<4 { header[i * 4 + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * byte)) }
        }
        return header
    }

    static func page(_ fill: UInt8) -> [UInt8] { [UInt8](repeating: fill, count: pageSize) }

    static func frameOffset(_ index: Int) -> Int64 { Int64(32 + index * (24 + pageSize)) }

    @Test func aTransactionReachesTheFileInOneWriteWhenItsCommitFramesPageIsWritten() throws {
        let wal = try WALFile()
        var expected = [UInt8](repeating: 0x57, count: 32)
        wal.write(expected, at: 0)
        for index in 0..<3 {
            let header = Self.frameHeader(page: UInt32(index + 1), commitSize: 0)
            wal.write(header, at: Self.frameOffset(index))
            wal.write(Self.page(UInt8(index)), at: Self.frameOffset(index) + 24)
            expected += header + Self.page(UInt8(index))
        }
        #expect(wal.onDisk.isEmpty, "frames before the commit frame are gathered")
        let commit = Self.frameHeader(page: 4, commitSize: 4)
        wal.write(commit, at: Self.frameOffset(3))
        #expect(wal.onDisk.isEmpty, "the commit frame's header alone is gathered too")
        wal.write(Self.page(3), at: Self.frameOffset(3) + 24)
        expected += commit + Self.page(3)
        // No sync, no other call: the commit frame's page write itself hands the transaction to the kernel
        // (what synchronous = NORMAL relies on when the commit returns).
        wal.holds(expected)
    }

    @Test func everyOtherOperationSeesTheGatheredBytes() throws {
        let wal = try WALFile()
        let header = Self.frameHeader(page: 1, commitSize: 0)
        wal.write([UInt8](repeating: 1, count: 32), at: 0)
        wal.write(header, at: Self.frameOffset(0))
        wal.write(Self.page(9), at: Self.frameOffset(0) + 24)
        #expect(wal.onDisk.isEmpty)
        var size: sqlite3_int64 = 0
        #expect(wal.methods.xFileSize(wal.file, &size) == SQLITE_OK)
        #expect(size == Self.frameOffset(1))
        #expect(wal.onDisk.count == Int(Self.frameOffset(1)))

        wal.write(Self.frameHeader(page: 2, commitSize: 0), at: Self.frameOffset(1))
        var read = [UInt8](repeating: 0, count: 24)
        let rc = read.withUnsafeMutableBytes { wal.methods.xRead(wal.file, $0.baseAddress, 24, Self.frameOffset(1)) }
        #expect(rc == SQLITE_OK)
        #expect(read == Self.frameHeader(page: 2, commitSize: 0))

        wal.write(Self.page(7), at: Self.frameOffset(1) + 24)
        #expect(wal.methods.xSync(wal.file, SQLITE_SYNC_NORMAL) == SQLITE_OK)
        #expect(wal.onDisk.count == Int(Self.frameOffset(2)))
        wal.write(Self.frameHeader(page: 3, commitSize: 0), at: Self.frameOffset(2))
        #expect(wal.methods.xTruncate(wal.file, Self.frameOffset(1)) == SQLITE_OK)
        #expect(wal.onDisk.count == Int(Self.frameOffset(1)), "written, then truncated: in SQLite's order")
    }

    /// Random writes (runs that continue each other, frames written again in place, jumps back) against a
    /// plain file that takes each write as it comes: the same bytes after a commit frame or a sync.
    @Test func randomWritesLeaveTheSameBytesAsWritingEachThrough() throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let wal = try WALFile()
            var model = [UInt8]()
            func apply(_ bytes: [UInt8], at offset: Int) {
                if model.count < offset + bytes.count { model += [UInt8](repeating: 0, count: offset + bytes.count - model.count) }
                model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            }
            var next = 0
            wal.write([UInt8](repeating: 3, count: 32), at: 0)
            apply([UInt8](repeating: 3, count: 32), at: 0)
            for _ in 0..<Int.random(in: 1...60, using: &random) {
                let frame = Int.random(in: 0...3, using: &random) == 0 ? Int.random(in: 0...max(0, next), using: &random) : next
                let commit = Int.random(in: 0...4, using: &random) == 0
                let header = Self.frameHeader(page: UInt32(frame + 1), commitSize: commit ? UInt32(frame + 1) : 0)
                let page = Self.page(UInt8.random(in: 0...255, using: &random))
                wal.write(header, at: Self.frameOffset(frame))
                apply(header, at: Int(Self.frameOffset(frame)))
                wal.write(page, at: Self.frameOffset(frame) + 24)
                apply(page, at: Int(Self.frameOffset(frame)) + 24)
                next = max(next, frame + 1)
                if commit { wal.holds(model) }
            }
            #expect(wal.methods.xSync(wal.file, SQLITE_SYNC_NORMAL) == SQLITE_OK)
            wal.holds(model)
        }
    }

    /// More than the default VFS writes at once (it masks a write's count to 17 bits and calls a short write
    /// a full disk) and more than the gathering limit: written in pieces, every byte in place.
    @Test func aTransactionLargerThanOneWriteReachesTheFileWhole() throws {
        let wal = try WALFile()
        let pageSize = 4096
        var expected = [UInt8](repeating: 0x11, count: 32)
        wal.write(expected, at: 0)
        let frames = Int(CCSD_WAL_GATHER_LIMIT) / (24 + pageSize) + 40
        for index in 0..<frames {
            let header = Self.frameHeader(page: UInt32(index + 1), commitSize: index == frames - 1 ? UInt32(frames) : 0)
            let page = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: pageSize)
            let offset = Int64(32 + index * (24 + pageSize))
            wal.write(header, at: offset)
            wal.write(page, at: offset + 24)
            expected += header + page
        }
        wal.holds(expected)
    }

    /// The store's own connection: with synchronous = NORMAL (no sync at a commit), a returned commit is in
    /// the WAL file for any other reader, here a connection through SQLite's default VFS.
    @Test func aReturnedCommitIsInTheFileForAnotherConnection() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteMessageStore(directory: directory.path + "/state",
                                           configuration: StoreConfiguration(synchronous: .normal))
        _ = try store.commit(batch(inserting: (0..<300).map { "m\($0)" }), nowUnixMillis: 1_000)
        #expect(try store.text("PRAGMA main.journal_mode") == "wal")
        var reader: OpaquePointer?
        #expect(sqlite3_open_v2(store.databasePath, &reader, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(reader) }
        var statement: OpaquePointer?
        #expect(sqlite3_prepare_v2(reader, "SELECT count(*) FROM messages", -1, &statement, nil) == SQLITE_OK)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_step(statement) == SQLITE_ROW)
        #expect(sqlite3_column_int64(statement, 0) == 300)
    }
}

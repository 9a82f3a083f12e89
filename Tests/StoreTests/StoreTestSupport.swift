import CCS
import Dispatch
import Foundation
import Testing
@testable import Store

/// The stores the behavioural tests run against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite

    var testDescription: String { rawValue }

    func make(in directory: TemporaryDirectory, configuration: StoreConfiguration = StoreConfiguration())
        throws -> any Store.MessageStore {
        switch self {
        case .memory: Store.InMemoryMessageStore(configuration: configuration)
        case .sqlite: try SQLiteMessageStore(directory: directory.path + "/state", configuration: configuration)
        }
    }
}

/// A directory under /tmp, removed with everything in it when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String

    init() {
        var template = Array("/tmp/ccsd-store-test.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A small tmpfs (we run as root in the test container): a real full disk and a real read-only file system.
final class TmpfsMount: @unchecked Sendable {
    let path: String
    private let parent = TemporaryDirectory()

    /// Whether this process may mount (root with CAP_SYS_ADMIN); the tmpfs tests are skipped otherwise.
    static let isPermitted: Bool = {
        guard let probe = try? TmpfsMount(size: "64k") else { return false }
        _ = probe
        return true
    }()

    init(size: String) throws {
        path = parent.path + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try run("/bin/mount", "-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path)
    }

    func remount(readOnly: Bool) throws {
        try run("/bin/mount", "-o", readOnly ? "remount,ro" : "remount,rw", path)
    }

    deinit { _ = try? run("/bin/umount", path) }

    /// Fills the file system with a file, leaving about `leaving` bytes free; returns the file's path.
    func fill(leaving: Int) throws -> String {
        let filler = path + "/filler"
        var info = statvfs()
        statvfs(path, &info)
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let size = max(0, free - leaving)
        guard FileManager.default.createFile(atPath: filler, contents: Data(count: size)) else {
            throw CommandFailed(command: "create \(filler)", status: 1)
        }
        return filler
    }
}

@discardableResult
func run(_ executable: String, _ arguments: String...) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CommandFailed(command: ([executable] + arguments).joined(separator: " "), status: process.terminationStatus)
    }
    return process.terminationStatus
}

struct CommandFailed: Error { let command: String; let status: Int32 }

// MARK: - Builders

func message(_ id: String, ttl: Int = 600, bytes: Int = 0, acceptedAtUnixMillis: Int64 = 0) -> MessageRecord {
    let padding = String(repeating: "x", count: bytes)
    return MessageRecord(messageID: id, json: #"{"to":"tok-\#(id)","message_id":"\#(id)","data":{"p":"\#(padding)"}}"#,
                         to: "tok-\(id)", rateKey: "tok-\(id)", acceptedAt: Double(acceptedAtUnixMillis) / 1000,
                         acceptedAtUnixMillis: acceptedAtUnixMillis, timeToLive: ttl)
}

func acceptedLine(_ id: String) -> String { #"{"event":"accepted","message_id":"\#(id)"}"# }

func insert(_ id: String, at millis: Int64 = 1_000, line: Int? = nil, bytes: Int = 0) -> StoreBatch.Insert {
    StoreBatch.Insert(record: message(id, bytes: bytes, acceptedAtUnixMillis: millis), line: line,
                      acceptedLine: acceptedLine(id))
}

func finalLine(_ id: String, _ outcome: String = "acked") -> String { #"{"event":"\#(outcome)","message_id":"\#(id)"}"# }

func final(_ recordID: UInt64, _ id: String, _ outcome: String = "acked") -> StoreBatch.Record {
    StoreBatch.Record(id: recordID, line: finalLine(id, outcome), finalMessageID: id)
}

func upstream(_ recordID: UInt64, _ id: String) -> StoreBatch.Record {
    StoreBatch.Record(id: recordID, line: #"{"event":"upstream","message_id":"\#(id)"}"#, handedOverMessageID: id)
}

func batch(_ build: (inout StoreBatch) -> Void) -> StoreBatch {
    var batch = StoreBatch()
    build(&batch)
    return batch
}

func batch(inserting ids: [String], at millis: Int64 = 1_000) -> StoreBatch {
    batch { b in for id in ids { b.insert(insert(id, at: millis)) } }
}

// MARK: - A loop for the writer

/// A serial queue standing in for the event loop: `turn` runs a block as one loop turn; reports are collected.
final class TestLoop: @unchecked Sendable {
    let queue = DispatchQueue(label: "ccsd.store-tests.loop")
    private let lock = NSLock()
    private var collected: [StoreWriter.Report] = []

    func execute(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    func turn<T>(_ body: () throws -> T) rethrows -> T { try queue.sync(execute: body) }

    func append(_ report: StoreWriter.Report) {
        lock.lock()
        collected.append(report)
        lock.unlock()
    }

    var reports: [StoreWriter.Report] {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }

    /// Waits (bounded: at most 10 s in 5 ms steps) until `condition` holds for the reports so far.
    @discardableResult
    func waitUntil(_ condition: ([StoreWriter.Report]) -> Bool) -> Bool {
        for _ in 0..<2000 {
            if condition(reports) { return true }
            usleep(5_000)
        }
        return condition(reports)
    }

    func makeWriter(store: any Store.MessageStore, configuration: StoreWriter.Configuration = .init(),
                    now: @escaping @Sendable () -> Int64 = { 1_000 }) -> StoreWriter {
        StoreWriter(store: store, configuration: configuration, now: now,
                    execute: { [self] work in execute(work) }, report: { [self] report in append(report) })
    }
}

extension [StoreWriter.Report] {
    var committed: [StoreCommitResult] { compactMap { if case .committed(let r) = $0 { r } else { nil } } }
    var persisted: [PersistResult] {
        flatMap { report -> [PersistResult] in
            switch report {
            case .committed(let result): result.persisted
            case .insertsFailed(let results): results
            default: []
            }
        }
    }
}

/// A store that counts commits and can fail the next ones with a given error (the writer's tests).
final class ScriptedStore: Store.MessageStore, @unchecked Sendable {
    let inner: any Store.MessageStore
    private let lock = NSLock()
    private var failures: [StoreError] = []
    private(set) var batches: [StoreBatch] = []
    private(set) var closed = false

    init(_ inner: any Store.MessageStore) { self.inner = inner }

    func failNext(_ errors: StoreError...) {
        lock.lock()
        failures += errors
        lock.unlock()
    }

    var committedBatches: [StoreBatch] {
        lock.lock()
        defer { lock.unlock() }
        return batches
    }

    func load(nowUnixMillis: Int64) throws(StoreError) -> StoreSnapshot { try inner.load(nowUnixMillis: nowUnixMillis) }

    func commit(_ batch: StoreBatch, nowUnixMillis: Int64) throws(StoreError) -> StoreCommitResult {
        lock.lock()
        batches.append(batch)
        let failure = failures.isEmpty ? nil : failures.removeFirst()
        lock.unlock()
        if let failure { throw failure }
        return try inner.commit(batch, nowUnixMillis: nowUnixMillis)
    }

    func events(after seq: Int64, limit: Int) throws(StoreError) -> [JournaledEvent] {
        try inner.events(after: seq, limit: limit)
    }

    func acknowledgeEvents(consumer: String, through seq: Int64) throws(StoreError) {
        try inner.acknowledgeEvents(consumer: consumer, through: seq)
    }

    func cursor(of consumer: String) throws(StoreError) -> Int64? { try inner.cursor(of: consumer) }

    func close() {
        lock.lock()
        closed = true
        lock.unlock()
        inner.close()
    }
}

let diskFull = StoreError(code: .full, path: "/state/ccsd.sqlite3", operation: "committing a batch",
                          message: "database or disk is full", sqliteCode: 13)
let corrupt = StoreError(code: .corrupt, path: "/state/ccsd.sqlite3", operation: "committing a batch",
                         message: "database disk image is malformed", sqliteCode: 11)

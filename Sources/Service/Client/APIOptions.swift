import CCS
import Daemon
import FoundationEssentials
import Glibc

/// A command-line mistake: the flag (or argument) and the rule it breaks.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var flag: String
    public var rule: String
    public init(_ flag: String, _ rule: String) {
        self.flag = flag
        self.rule = rule
    }
    public var description: String { "\(flag): \(rule)" }
}

/// Walks a command's arguments: flags, their values, and positional arguments.
struct ArgumentCursor {
    let arguments: [String]
    private(set) var index = 0

    init(_ arguments: [String]) { self.arguments = arguments }

    /// The next argument, or nil at the end.
    mutating func next() -> String? {
        guard index < arguments.count else { return nil }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value after `flag`.
    /// - Throws: `UsageError` when there is none or it is empty.
    mutating func value(_ flag: String) throws(UsageError) -> String {
        guard let value = next(), !value.isEmpty else { throw UsageError(flag, "needs a value") }
        return value
    }

    /// The value after `flag` as an integer in `range`.
    mutating func integer(_ flag: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        let text = try value(flag)
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(flag, "must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return number
    }

    /// The value after `flag` as seconds in `range`.
    mutating func seconds(_ flag: String, _ range: ClosedRange<Double>) throws(UsageError) -> Double {
        let text = try value(flag)
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw UsageError(flag, "must be a number of seconds from \(APIClient.formatSeconds(range.lowerBound)) to \(APIClient.formatSeconds(range.upperBound)), got \"\(text)\"")
        }
        return number
    }

    /// The error for an argument no command knows, with the nearest known flag when it is a likely typo.
    static func unknown(_ argument: String, known: [String]) -> UsageError {
        let suggestion = EditDistance.suggestion(for: argument, among: known).map { " (did you mean \($0)?)" } ?? ""
        return UsageError(argument, "unknown option\(suggestion)")
    }
}

/// How a client command reaches the service: `--api-socket PATH` (default `$CCSD_API_SOCKET`, else
/// `/run/ccsd/api.sock`), or `--api-url http://HOST:PORT` (or `$CCSD_API_URL`) with `--api-token-file FILE`
/// (or `$CCSD_API_TOKEN_FILE`), and `--timeout SECONDS` for each request.
public struct APIOptions: Sendable, Equatable {
    public var socketPath: String?
    public var url: String?
    public var tokenFile: String?
    public var timeout: Double?

    public init() {}

    static let flags = ["--api-socket", "--api-url", "--api-token-file", "--timeout"]

    /// The API flags' help lines, the text starting at column `width` + 2 like the command's other flags.
    static func usage(width: Int) -> String {
        [("--api-socket PATH", "the API's Unix socket (default: $CCSD_API_SOCKET, else /run/ccsd/api.sock)"),
         ("--api-url URL", "the API over TCP instead, e.g. http://127.0.0.1:8080 (or $CCSD_API_URL)"),
         ("--api-token-file FILE", "the bearer token for --api-url (or $CCSD_API_TOKEN_FILE)"),
         ("--timeout SECONDS", "seconds each request may take (default 30; long polls add their wait)")]
            .map { "  " + $0.0.padded(to: width) + $0.1 }
            .joined(separator: "\n")
    }

    /// Takes `flag` (and its value) when it is one of the API flags; returns false for any other flag.
    mutating func take(_ flag: String, from cursor: inout ArgumentCursor) throws(UsageError) -> Bool {
        switch flag {
        case "--api-socket": socketPath = try cursor.value(flag)
        case "--api-url": url = try cursor.value(flag)
        case "--api-token-file": tokenFile = try cursor.value(flag)
        case "--timeout": timeout = try cursor.seconds(flag, 0.1...3600)
        default: return false
        }
        return true
    }

    /// The endpoint these options and the environment name; a token file is read here.
    /// - Throws: `UsageError` for a malformed URL, both a socket and a URL, or an unreadable or empty token file.
    public func endpoint(environment: [String: String]) throws(UsageError) -> APIEndpoint {
        if socketPath != nil, url != nil {
            throw UsageError("--api-url", "give either --api-socket or --api-url, not both")
        }
        let url = socketPath == nil ? (url ?? environment["CCSD_API_URL"].flatMap { $0.isEmpty ? nil : $0 }) : nil
        guard let url else {
            let path = socketPath ?? environment["CCSD_API_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            return .unixSocket(path: path ?? APIEndpoint.defaultSocketPath)
        }
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), let parsed = URLComponents(string: url),
              let host = parsed.host, !host.isEmpty, parsed.query == nil, parsed.user == nil else {
            throw UsageError("--api-url", "must be http://HOST:PORT (or https://), got \"\(url)\"")
        }
        var token: String?
        if let file = tokenFile ?? environment["CCSD_API_TOKEN_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            let data: Data
            do {
                data = try Configuration.readFile(file, field: "--api-token-file")
            } catch {
                throw UsageError(error.field, error.rule)
            }
            let text = String(decoding: data, as: UTF8.self).trimmingWhitespace()
            guard !text.isEmpty, !text.contains(where: { $0.isNewline || $0 == "\r" }) else {
                throw UsageError("--api-token-file", "\(file) must hold one token on one line")
            }
            token = text
        }
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        return .tcp(baseURL: base, token: token)
    }

    /// A client for these options.
    /// - Throws: `UsageError` (see `endpoint(environment:)`).
    public func client(environment: [String: String]) throws(UsageError) -> APIClient {
        APIClient(endpoint: try endpoint(environment: environment), requestTimeout: timeout ?? 30)
    }
}

/// Where a command writes: stdout and stderr in the binary, a capture in tests.
public struct CommandOutput {
    public var out: (String) -> Void
    public var err: (String) -> Void

    public init(out: @escaping (String) -> Void, err: @escaping (String) -> Void) {
        self.out = out
        self.err = err
    }

    /// stdout and stderr of the process, each line written at once (`write(2)`, no buffering: a line is out
    /// before the command acts on it having been printed, e.g. acknowledges an event). When stdout refuses a
    /// line (a closed pipe), the process exits 1 at once: nothing unprinted is acted on.
    public static var standard: CommandOutput { CommandOutput(
        out: { line in
            if !writeAll(1, line + "\n") {
                writeAll(2, "ccsd: cannot write to stdout: \(String(cString: strerror(errno)))\n")
                exit(1)
            }
        },
        err: { writeAll(2, $0 + "\n") }) }

    /// Writes every byte of `text` to `fd`; returns false when the descriptor refused (a closed pipe).
    @discardableResult
    static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            bytes = bytes.dropFirst(written)
        }
        return true
    }
}

/// The exit codes the client commands share (each command's `--help` lists its own).
public enum ClientExitCode {
    /// Done: every message accepted (and acked with `--wait`), the feed read, the status shown.
    public static let success: Int32 = 0
    /// A message was rejected, nacked or expired (the reason is printed).
    public static let messageFailed: Int32 = 1
    /// Usage: an unknown flag, a missing or malformed value, an unreadable file.
    public static let usage: Int32 = 2
    /// ccsd could not be reached, did not answer in time, or answered with an error status.
    public static let unavailable: Int32 = 3
    /// `--wait-timeout` passed before every message was final.
    public static let waitTimedOut: Int32 = 4
}

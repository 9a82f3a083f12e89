import CCS
import Daemon
import FoundationEssentials
import HTTPServer

/// `ccsd serve` command-line options: the API's own flags; every other flag is `ccsd run`'s (`RunOptions`),
/// except the batch ones (`--input`, `--events`, `--exit-when-done`).
struct ServeOptions: Equatable {
    var run = RunOptions()
    var apiSocket = "/run/ccsd/api.sock"
    var apiSocketGroup: String?
    var apiListen: (host: String, port: UInt16)?
    var apiTokenFile: String?
    var maxBodyBytes = 4 << 20
    /// nil: `Logger.Format.automatic` (journal when stderr is journald's stream, else plain).
    var logFormat: Logger.Format?
    var help = false

    static func == (lhs: ServeOptions, rhs: ServeOptions) -> Bool {
        lhs.run == rhs.run && lhs.apiSocket == rhs.apiSocket && lhs.apiSocketGroup == rhs.apiSocketGroup
            && lhs.apiListen?.host == rhs.apiListen?.host && lhs.apiListen?.port == rhs.apiListen?.port
            && lhs.apiTokenFile == rhs.apiTokenFile && lhs.maxBodyBytes == rhs.maxBodyBytes
            && lhs.logFormat == rhs.logFormat && lhs.help == rhs.help
    }

    static let usage = """
        usage: ccsd serve [--config FILE] [--state-dir DIR] [--store sqlite|memory] [--api-socket PATH]
                          [--api-socket-group GROUP] [--api-listen HOST:PORT] [--api-token-file FILE]
                          [--api-max-body-bytes N] [--max-queued N] [--log-level LEVEL]
                          [--log-format plain|journal|json] [ccsd run's connection flags]

        Runs ccsd as a service: the store, the connections and the HTTP API (docs/api.md). No stdin input:
        producers submit over the API.

          --config FILE             JSON configuration, as for ccsd run (see config/ccsd.json)
          --state-dir DIR           the store's directory (default: $STATE_DIRECTORY, else /var/lib/ccsd)
          --store sqlite|memory     sqlite (default) or memory (nothing survives a restart)
          --api-socket PATH         the API's Unix socket (default /run/ccsd/api.sock, mode 0660); unused when
                                    systemd passes a socket (ccsd.socket)
          --api-socket-group GROUP  the socket's group (who may use the API)
          --api-listen HOST:PORT    also listen on TCP (PORT alone: 127.0.0.1); every request there needs
                                    Authorization: Bearer TOKEN
          --api-token-file FILE     the TCP token (else the systemd credential api-token)
          --api-max-body-bytes N    largest request body (default 4194304); larger ones get 413
          --max-queued N            POST /v1/messages answers 503 while N messages or more are outstanding
                                    (default 20000)
          --log-level LEVEL         debug, info (default), warning, error
          --log-format FORMAT       plain, journal (<N> priority prefixes), json; default: journal when
                                    stderr is connected to journald, else plain
          --endpoint, --ca-file, --sender-id, --server-key-file, --connections: as for ccsd run
          -h, --help                this text

        signals: SIGTERM/SIGINT stop gracefully; SIGHUP re-reads --config and reloads.
        exit codes: 0 stopped, 2 usage, configuration or API listener, 3 authentication failed, 5 the store failed
        """

    /// Parses the arguments after `serve`.
    /// - Throws: `ConfigurationError` naming the flag and the rule.
    static func parse(_ arguments: [String]) throws(ConfigurationError) -> ServeOptions {
        var options = ServeOptions()
        var rest: [String] = []
        var index = 0
        func value(_ flag: String) throws(ConfigurationError) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].isEmpty else {
                throw ConfigurationError(field: flag, rule: "needs a value")
            }
            return arguments[index]
        }
        func count(_ flag: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), range.contains(number) else {
                throw ConfigurationError(field: flag, rule: "must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
            }
            return number
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--api-socket": options.apiSocket = try value(flag)
            case "--api-socket-group": options.apiSocketGroup = try value(flag)
            case "--api-listen":
                let text = try value(flag)
                guard let parsed = HTTPServer.parseHostPort(text) else {
                    throw ConfigurationError(field: flag, rule: "must be HOST:PORT (or [IPv6]:PORT, or PORT for 127.0.0.1) with a port from 0 to 65535, got \"\(text)\"")
                }
                options.apiListen = parsed
            case "--api-token-file": options.apiTokenFile = try value(flag)
            case "--api-max-body-bytes": options.maxBodyBytes = try count(flag, 1...(1 << 30))
            case "--log-format":
                let text = try value(flag)
                guard let format = Logger.Format(rawValue: text) else {
                    throw ConfigurationError(field: flag, rule: "must be one of plain, journal, json, got \"\(text)\"")
                }
                options.logFormat = format
            case "--input", "--events", "--exit-when-done":
                throw ConfigurationError(field: flag, rule: "is for ccsd run; ccsd serve takes messages over its HTTP API and gives events at GET /v1/events")
            case "-h", "--help": options.help = true
            default:
                rest.append(flag)
                // The value of a ccsd run flag goes along with it.
                if flag.hasPrefix("--"), index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") {
                    index += 1
                    rest.append(arguments[index])
                }
            }
            index += 1
        }
        options.run = try RunOptions.parse(rest)
        options.help = options.help || options.run.help
        return options
    }

    /// The TCP token: `--api-token-file`, else `$CREDENTIALS_DIRECTORY/api-token` (systemd `LoadCredential=`).
    /// Trailing whitespace (a final newline) is not part of it.
    /// - Throws: `ConfigurationError` when TCP is asked for and there is no token, or the file cannot be read
    ///   or holds an empty token. The token itself is never in the error.
    func bearerToken(environment: [String: String]) throws(ConfigurationError) -> String? {
        guard apiListen != nil else { return nil }
        let path: String
        let field: String
        if let apiTokenFile {
            (path, field) = (apiTokenFile, "--api-token-file")
        } else if let directory = environment["CREDENTIALS_DIRECTORY"], FileManager.default.fileExists(atPath: directory + "/api-token") {
            (path, field) = (directory + "/api-token", "credential api-token")
        } else {
            throw ConfigurationError(field: "--api-listen", rule: "needs a token: --api-token-file FILE or the systemd credential api-token")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(field: field, rule: "cannot read \(path)")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingWhitespace()
        guard !token.isEmpty, !token.contains(where: { $0.isWhitespace }) else {
            throw ConfigurationError(field: field, rule: "must hold one token without spaces (\(path))")
        }
        return token
    }
}

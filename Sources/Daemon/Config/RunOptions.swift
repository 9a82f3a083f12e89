import CCS
import FoundationEssentials

/// `ccsd run` command-line options. Flags override the configuration file.
public struct RunOptions: Sendable, Equatable {
    public var configPath: String?
    public var endpoints: [Endpoint] = []
    public var caFile: String?
    public var senderID: String?
    public var serverKeyFile: String?
    public var connections: Int?
    public var input = "-"
    public var events = "-"
    public var exitWhenDone = false
    /// `--state-dir`: the SQLite store's directory.
    public var stateDirectory: String?
    /// `--store`: which store keeps accepted messages.
    public var store: Configuration.StoreKind?
    /// `--log-level`; nil leaves the configuration's `log_level` (default info).
    public var logLevel: String?
    /// `--max-queued`: overrides `max_queued`.
    public var maxQueued: Int?
    /// `-h`/`--help` was given: print the usage and exit 0.
    public var help = false

    public init() {}

    public static let usage = """
        usage: ccsd run [--config FILE] [--endpoint HOST:PORT]... [--ca-file FILE] [--sender-id ID]
                        [--server-key-file FILE] [--connections N] [--input FILE|-] [--events FILE|-]
                        [--exit-when-done] [--state-dir DIR] [--store sqlite|memory]
                        [--log-level debug|info|warning|error] [--max-queued N]

          --config FILE           JSON configuration (see config/ccsd.json); flags below override it
          --endpoint HOST:PORT    CCS endpoint; repeat for the secondary (the first is primary)
          --ca-file FILE          PEM CA bundle to verify the server with (default: system store)
          --sender-id ID          the numeric sender ID
          --server-key-file FILE  file holding the server key (else CCSD_SERVER_KEY, else server_key_file)
          --connections N         connections to keep open, 1-1000
          --input FILE|-          downstream messages, one JSON object per line (default: stdin); a FIFO
                                  is read as producers come and go and never ends, but see --exit-when-done
          --events FILE|-         where events go, one JSON object per line (default: stdout)
          --exit-when-done        exit 0 once the input has ended and every stored message is final, those
                                  resumed from an earlier run included (a FIFO ends when no producer has it
                                  open any more)
          --state-dir DIR         where the store keeps accepted messages and events (DIR/ccsd.sqlite3);
                                  default: $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/ccsd
          --store sqlite|memory   sqlite (default): accepted messages survive a restart and are resent;
                                  memory: nothing survives a restart (tests, benchmarks)
          --log-level LEVEL       stderr log level (default: log_level, else info; debug adds one line per
                                  message)
          --max-queued N          messages outstanding (accepted, not final) at which intake pauses
                                  (ccsd serve: POST /v1/messages answers 503); default: max_queued, else 20000
          -h, --help              this text

        SIGHUP reads the configuration again and applies it without dropping a message (connections,
        limits, log level, server key and CA file for new connections); a bad one is refused and logged.

        exit codes: 0 done or stopped by SIGTERM/SIGINT, 1 the input could not be read, 2 usage or
        configuration, 3 authentication failed, 4 events could not be written, 5 the store failed
        """

    /// Parses the arguments after `run`.
    /// - Throws: `ConfigurationError` naming the flag and the rule.
    public static func parse(_ arguments: [String]) throws(ConfigurationError) -> RunOptions {
        var options = RunOptions()
        var index = 0
        func value(_ flag: String) throws(ConfigurationError) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].isEmpty else {
                throw ConfigurationError(field: flag, rule: "needs a value")
            }
            return arguments[index]
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--config": options.configPath = try value(flag)
            case "--endpoint":
                let text = try value(flag)
                guard let endpoint = Endpoint(parsing: text) else {
                    throw ConfigurationError(field: flag, rule: "must be HOST:PORT with a port from 1 to 65535, got \"\(Configuration.shown(text))\"")
                }
                options.endpoints.append(endpoint)
            case "--ca-file": options.caFile = try value(flag)
            case "--sender-id": options.senderID = try value(flag)
            case "--server-key-file": options.serverKeyFile = try value(flag)
            case "--connections":
                let text = try value(flag)
                guard let n = Int(text), (1...1000).contains(n) else {
                    throw ConfigurationError(field: flag, rule: "must be an integer from 1 to 1000, got \"\(Configuration.shown(text))\"")
                }
                options.connections = n
            case "--input": options.input = try value(flag)
            case "--events": options.events = try value(flag)
            case "--exit-when-done": options.exitWhenDone = true
            case "--state-dir": options.stateDirectory = try value(flag)
            case "--store":
                let text = try value(flag)
                guard let store = Configuration.StoreKind(rawValue: text) else {
                    throw ConfigurationError(field: flag, rule: "must be one of sqlite, memory, got \"\(Configuration.shown(text))\"")
                }
                options.store = store
            case "-h", "--help": options.help = true
            case "--max-queued":
                let text = try value(flag)
                guard let count = Int(text), (1...10_000_000).contains(count) else {
                    throw ConfigurationError(field: flag, rule: "must be an integer from 1 to 10000000, got \"\(Configuration.shown(text))\"")
                }
                options.maxQueued = count
            case "--log-level":
                let text = try value(flag)
                guard ["debug", "info", "warning", "error"].contains(text) else {
                    throw ConfigurationError(field: flag, rule: "must be one of debug, info, warning, error, got \"\(Configuration.shown(text))\"")
                }
                options.logLevel = text
            default:
                let known = ["--config", "--endpoint", "--ca-file", "--sender-id", "--server-key-file", "--connections",
                             "--input", "--events", "--exit-when-done", "--state-dir", "--store", "--log-level", "--max-queued"]
                let suggestion = EditDistance.suggestion(for: flag, among: known).map { " (did you mean \($0)?)" } ?? ""
                throw ConfigurationError(field: Configuration.shown(flag), rule: "unknown option\(suggestion)")
            }
            index += 1
        }
        return options
    }

    /// The configuration file (if any) with these flags on top, the state directory resolved (`--state-dir`,
    /// else `state_dir`, else `$STATE_DIRECTORY`, else `/var/lib/ccsd`), and the server key loaded.
    /// - Throws: `ConfigurationError`.
    public func configuration(environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        if let configPath {
            let data = try Configuration.readFile(configPath, field: "--config")
            try configuration.apply(fileContents: data, path: configPath)
        }
        if let first = endpoints.first {
            configuration.primaryEndpoint = first
            configuration.secondaryEndpoint = endpoints.count > 1 ? endpoints[1] : nil
        }
        if endpoints.count > 2 {
            throw ConfigurationError(field: "--endpoint", rule: "at most two: the primary and the secondary")
        }
        if let caFile { configuration.caFile = caFile }
        if let senderID { configuration.senderID = senderID }
        if let connections { configuration.connections = connections }
        if let store { configuration.store = store }
        if let logLevel, let level = Logger.Level(name: logLevel) { configuration.logLevel = level }
        if let maxQueued { configuration.maxQueued = maxQueued }
        configuration.stateDirectory = stateDirectory ?? configuration.stateDirectory
            ?? Configuration.defaultStateDirectory(environment: environment)
        try configuration.loadServerKey(flagFile: serverKeyFile, environment: environment)
        try configuration.validateForRun()
        if let caFile = configuration.caFile {
            _ = try Configuration.readFile(caFile, field: "ca_file")
        }
        return configuration
    }
}

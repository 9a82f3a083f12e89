import CCS
import Dispatch
import FoundationEssentials
import Glibc
import Store
import TLS

/// The `ccsd` command line: `ccsd run …`.
public enum CCSDCommand {
    /// Runs the command; returns the process exit code (`DaemonLifecycle.ExitCode`: 0 done, 1 input, 2 usage or
    /// configuration, 3 authentication, 4 events outlet, 5 store).
    public static func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            StandardStreams.writeError(RunOptions.usage + "\n")
            return 2
        }
        switch command {
        case "run":
            return run(Array(arguments.dropFirst()))
        case "-h", "--help", "help":
            print(RunOptions.usage)
            return 0
        default:
            StandardStreams.writeError("ccsd: unknown command \"\(command)\"\n\(RunOptions.usage)\n")
            return 2
        }
    }

    static func run(_ arguments: [String]) -> Int32 {
        // Before any thread starts: a SIGTERM during start-up must wait for its handler, not be dropped.
        SignalMask.blockHandledSignals()
        signal(SIGPIPE, SIG_IGN)
        let options: RunOptions
        let configuration: Configuration
        let outlet: EventOutlet
        do {
            options = try RunOptions.parse(arguments)
            if options.help {
                print(RunOptions.usage)
                return 0
            }
            configuration = try options.configuration(environment: ProcessInfo.processInfo.environment)
            outlet = try EventOutlet(path: options.events)
        } catch {
            // Every problem of the configuration, one line each.
            let lines = "\(error)".split(separator: "\n").map { "ccsd: \($0)\n" }.joined()
            StandardStreams.writeError(lines)
            return 2
        }
        let environment = ProcessInfo.processInfo.environment
        let logger = Logger(minimum: configuration.logLevel, format: .automatic(environment: environment))
        // The store first: one that cannot be opened (locked, read-only, corrupt) stops ccsd before any connection.
        let store: any MessageStore
        do {
            store = try configuration.openStore(migrationProgress: logger.storeMigrationLog())
        } catch {
            StandardStreams.writeError("ccsd: \(error)\n")
            return DaemonLifecycle.ExitCode.storeFailed.rawValue
        }
        let loop = EventLoop(label: "ccsd.loop", backend: .epoll)
        let exitCode = ExitBox()
        let daemon = CCSDaemon(configuration: configuration, store: store, outlet: outlet, logger: logger, loop: loop,
                               exitWhenDone: options.exitWhenDone) { code in exitCode.set(code) }
        // Signals first: nothing below may wait for a producer before SIGTERM can stop ccsd gracefully.
        var signalSources: [DispatchSourceSignal] = []
        for (sig, name) in [(SIGTERM, DaemonLifecycle.Signal.terminate), (SIGINT, .interrupt)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { daemon.execute { daemon.signal(name) } }
            source.resume()
            signalSources.append(source)
        }
        // SIGHUP: read the configuration again (file, flags, key) and apply it (`CCSDaemon.reload`); a bad one
        // is refused with a log line and the running one kept.
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler {
            do {
                let reloaded = try options.configuration(environment: environment)
                daemon.execute { _ = daemon.reload(reloaded) }
            } catch {
                logger.error("configuration reload refused; the running configuration is kept", ["error": "\(error)"])
            }
        }
        hangup.resume()
        signalSources.append(hangup)
        // A FIFO is only checked here; it is opened once the intake starts (see IntakeReader).
        let reader: IntakeReader
        do {
            reader = try IntakeReader(path: options.input, daemon: daemon,
                                      fifoEnd: options.exitWhenDone ? .whenWritersLeave : .never,
                                      maxLineBytes: configuration.maxLineBytes, loop: loop)
        } catch {
            StandardStreams.writeError("ccsd: \(error)\n")
            store.close()
            return 2
        }
        daemon.attachIntake { reader.start() }
        daemon.execute { daemon.start() }
        let code = exitCode.wait()
        signalSources.forEach { $0.cancel() }
        return code
    }
}

/// Carries the exit code from the loop to the main thread (`ccsd run`, `ccsd serve`).
public final class ExitBox: @unchecked Sendable {
    // @unchecked Sendable: `code` is written once before `semaphore.signal()` and read after `wait()`.
    private var code: Int32 = 0
    private let semaphore = DispatchSemaphore(value: 0)
    public init() {}
    /// Called once, on the loop, with the exit code.
    public func set(_ value: Int32) {
        code = value
        semaphore.signal()
    }
    /// Waits (on the main thread) for `set`.
    public func wait() -> Int32 {
        semaphore.wait()
        return code
    }
}

import Daemon
import Dispatch
import Foundation
import HTTPServer
import Store
import TLS

/// `ccsd serve`: the service. Opens the store (exit 5 when it cannot), then the API listens (the socket systemd
/// passes, else `--api-socket`; and TCP with `--api-listen`), then the daemon loads the store and opens the
/// pool. READY=1 once the store is loaded and the API listens. SIGTERM/SIGINT stop gracefully (STOPPING=1;
/// submissions get 503 from then on), SIGHUP re-reads the configuration file and reloads (RELOADING=1, then
/// READY=1). STATUS= follows the connections and the queue (at most once a second); WATCHDOG=1 from the loop.
enum ServeCommand {
    static func main(_ arguments: [String]) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let environment = ProcessInfo.processInfo.environment
        let options: ServeOptions
        let configuration: Configuration
        let token: String?
        do {
            options = try ServeOptions.parse(arguments)
            if options.help {
                print(ServeOptions.usage)
                return 0
            }
            configuration = try options.run.configuration(environment: environment)
            token = try options.bearerToken(environment: environment)
        } catch {
            FileHandle.standardError.write(Data("ccsd: \(error)\n".utf8))
            return 2
        }
        let level: Logger.Level = switch options.run.logLevel {
        case "debug": .debug
        case "warning": .warning
        case "error": .error
        default: .info
        }
        let logger = Logger(minimum: level, format: options.logFormat)
        // The store first: one that cannot be opened stops ccsd before the API or any connection.
        let store: any MessageStore
        do {
            store = try openStore(configuration)
            // The feed's consumer is registered from the start, so that the journal keeps what it has not
            // acknowledged (up to the events retention) even before its first ack.
            try store.acknowledgeEvents(consumer: CCSDaemon.apiConsumer, through: 0)
        } catch {
            FileHandle.standardError.write(Data("ccsd: \(error)\n".utf8))
            return DaemonLifecycle.ExitCode.storeFailed.rawValue
        }
        let loop = EventLoop(label: "ccsd.loop")
        let exitCode = ExitCodeBox()
        let notifier = SystemdNotifier()
        let service = ServiceBox()
        let daemon = CCSDaemon(configuration: configuration, store: store, outlet: DiscardingEventSink(), logger: logger,
                               loop: loop, exitWhenDone: false) { code in
            // On the loop: waiting requests get 503, the socket file goes.
            service.router?.releaseWaiters()
            service.server?.stop()
            service.timers.forEach { $0.cancel() }
            exitCode.set(code)
        }
        let router = APIRouter(daemon: daemon, loop: loop, options: APIRouter.Options(maxQueued: options.maxQueued),
                               metricsText: { "# ccsd metrics are not built yet\n" })
        let server = HTTPServer(loop: loop, limits: HTTPServer.Limits(maxBodyBytes: options.maxBodyBytes)) { request, responder in
            router.handle(request, responder)
        }
        service.router = router
        service.server = server

        var listeners: [HTTPServer.Listener] = []
        let inherited = SystemdSockets.listenFDs()
        if inherited.isEmpty {
            listeners.append(.unixSocket(path: options.apiSocket, mode: 0o660, group: options.apiSocketGroup))
        } else {
            listeners += inherited.map { .inherited(fd: $0, bearerToken: token) }
        }
        if let listen = options.apiListen, let token {
            listeners.append(.tcp(host: listen.host, port: listen.port, bearerToken: token))
        }
        let started: Result<[String], HTTPServerError> = loop.submitAndWait {
            do throws(HTTPServerError) {
                try server.start(listeners)
                return .success(server.listenerNames)
            } catch {
                return .failure(error)
            }
        }
        let names: [String]
        switch started {
        case .success(let listening): names = listening
        case .failure(let error):
            FileHandle.standardError.write(Data("ccsd: \(error)\n".utf8))
            store.close()
            return 2
        }

        var signalSources: [DispatchSourceSignal] = []
        for (sig, name) in [(SIGTERM, DaemonLifecycle.Signal.terminate), (SIGINT, .interrupt)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                daemon.execute {
                    router.stopping = true
                    notifier.stopping()
                    daemon.signal(name)
                }
            }
            source.resume()
            signalSources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler {
            // Read off the loop (a file); applied on it.
            let reloaded = Result { () throws(ConfigurationError) -> Configuration in
                try options.run.configuration(environment: environment)
            }
            daemon.execute {
                switch reloaded {
                case .failure(let error):
                    logger.error("reload refused: the configuration has a problem; the running one is kept", ["error": error.description])
                case .success(let configuration):
                    notifier.reloading()
                    switch daemon.reload(configuration) {
                    case .applied(let changes):
                        logger.info("configuration reloaded", ["changes": changes.isEmpty ? "none" : changes.joined(separator: ", ")])
                    case .refused(let reason):
                        logger.error("reload refused; the running configuration is kept", ["reason": reason])
                    }
                    notifier.ready(status: statusLine(daemon.snapshot(), configured: daemon.configuration.connections))
                }
            }
        }
        hangup.resume()
        signalSources.append(hangup)

        loop.execute {
            router.attach()
            daemon.start()
            logger.info("API listening", ["listeners": names.joined(separator: ",")])
            var lastStatus = statusLine(daemon.snapshot(), configured: configuration.connections)
            notifier.ready(status: lastStatus)
            service.timers.append(repeating(on: loop, every: 1) {
                let line = statusLine(daemon.snapshot(), configured: daemon.configuration.connections)
                if line != lastStatus {
                    lastStatus = line
                    notifier.status(line)
                }
            })
            if let interval = notifier.watchdogInterval, interval > 0 {
                service.timers.append(repeating(on: loop, every: interval) { notifier.watchdog() })
            }
        }
        let code = exitCode.wait()
        signalSources.forEach { $0.cancel() }
        return code
    }

    /// The store for a service: as for `ccsd run`, except that the memory store keeps events for the feed
    /// (`ccsd run`'s drops them at once, having written them to its events file).
    static func openStore(_ configuration: Configuration) throws(StoreError) -> any MessageStore {
        if configuration.store == .memory { return InMemoryMessageStore(configuration: configuration.storeConfiguration) }
        return try configuration.openStore()
    }

    /// systemd's STATUS= line: "2/2 connections ready, 12 queued, 40 in flight".
    static func statusLine(_ snapshot: DaemonSnapshot, configured: Int) -> String {
        var line = "\(snapshot.readyConnections)/\(configured) connections ready, \(snapshot.queued) queued, \(snapshot.inFlight) in flight"
        if !snapshot.storeWritable { line += ", store not writable" }
        if snapshot.lifecycle != "running" { line += ", \(snapshot.lifecycle)" }
        return line
    }

    /// Runs `work` on the loop every `seconds` until the returned handle is cancelled (on the loop).
    static func repeating(on loop: EventLoop, every seconds: Double, _ work: @escaping () -> Void) -> RepeatingTimer {
        let timer = RepeatingTimer()
        func arm() {
            timer.handle = loop.schedule(after: seconds) {
                guard !timer.cancelled else { return }
                work()
                arm()
            }
        }
        arm()
        return timer
    }
}

/// A repeating loop timer (`ServeCommand.repeating`); confined to the loop.
final class RepeatingTimer {
    var handle: TimerHandle?
    var cancelled = false
    func cancel() {
        cancelled = true
        handle?.cancel()
    }
}

/// What the exit path needs of the service, set before the loop runs it; used on the loop only.
final class ServiceBox: @unchecked Sendable {
    var router: APIRouter?
    var server: HTTPServer?
    var timers: [RepeatingTimer] = []
}

/// Carries the exit code from the loop to the main thread.
final class ExitCodeBox: @unchecked Sendable {
    // @unchecked Sendable: `code` is written once before `semaphore.signal()` and read after `wait()`.
    private var code: Int32 = 0
    private let semaphore = DispatchSemaphore(value: 0)
    func set(_ value: Int32) {
        code = value
        semaphore.signal()
    }
    func wait() -> Int32 {
        semaphore.wait()
        return code
    }
}

/// The events sink of `ccsd serve`: events are read from the journal (`GET /v1/events`), not written to a file.
final class DiscardingEventSink: EventSink {
    func append(_ line: String) {}
    func flush() -> Bool { true }
    var failure: String? { nil }
}

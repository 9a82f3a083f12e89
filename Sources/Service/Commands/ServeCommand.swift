import CCS
import Daemon
import Dispatch
import FoundationEssentials
import Glibc
import HTTPServer
import Store
import TLS

/// `ccsd serve`: the service. Opens the store (exit 5 when it cannot), then the API listens (the socket systemd
/// passes, else `--api-socket`; and TCP with `--api-listen`), then the daemon loads the store and opens the
/// pool, then the webhook outlet (with `webhook_url`). `SystemdSupervisor` does the sd_notify side: READY=1
/// once the store is loaded and the API listens; SIGTERM/SIGINT stop gracefully (STOPPING=1; submissions get
/// 503 from then on); SIGHUP re-reads the configuration file and reloads (RELOADING=1, then READY=1), then the
/// webhook follows; STATUS= follows the connections and the queue (checked once a second); WATCHDOG=1 from
/// the loop.
enum ServeCommand {
    static func main(_ arguments: [String]) -> Int32 {
        // Before any thread starts: a SIGTERM during start-up must wait for its handler, not be dropped.
        SignalMask.blockHandledSignals()
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
            StandardStreams.writeError("ccsd: \(error)\n")
            return 2
        }
        let logger = Logger(minimum: configuration.logLevel, format: options.logFormat ?? .automatic(environment: environment))
        // The store first: one that cannot be opened stops ccsd before the API or any connection.
        let store: any MessageStore
        do {
            store = try openStore(configuration, migrationProgress: startProgress(logger: logger, notifier: SystemdNotifier()))
            // The feed's consumer is registered from the start, so that the journal keeps what it has not
            // acknowledged (up to the events retention) even before its first ack.
            try store.acknowledgeEvents(consumer: CCSDaemon.apiConsumer, through: 0)
        } catch {
            StandardStreams.writeError("ccsd: \(error)\n")
            return DaemonLifecycle.ExitCode.storeFailed.rawValue
        }
        let loop = EventLoop(label: "ccsd.loop")
        let exitCode = ExitBox()
        let service = ServiceBox()
        let daemon = CCSDaemon(configuration: configuration, store: store, outlet: DiscardingEventSink(), logger: logger,
                               loop: loop, exitWhenDone: false) { code in
            // On the loop: waiting requests get 503, the socket file goes.
            service.router?.releaseWaiters()
            service.server?.stop()
            // A POST in progress is cut by the exit; its batch is delivered again by the next run (at least once).
            service.webhook?.stop(then: {})
            exitCode.set(code)
        }
        let router = APIRouter(daemon: daemon, loop: loop, options: APIRouter.Options(),
                               metricsText: { daemon.metricsText(webhook: service.webhook) },
                               recentErrors: logger.recentErrors)
        let server = HTTPServer(loop: loop, limits: HTTPServer.Limits(maxBodyBytes: options.maxBodyBytes)) { request, responder in
            router.handle(request, responder)
        }
        let supervisor = SystemdSupervisor(daemon: daemon, scheduler: loop, logger: logger, statusInterval: 1)
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
            StandardStreams.writeError("ccsd: \(error)\n")
            store.close()
            return 2
        }

        var signalSources: [any DispatchSourceSignal] = []
        for (sig, name) in [(SIGTERM, DaemonLifecycle.Signal.terminate), (SIGINT, .interrupt)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                daemon.execute {
                    router.stopping = true
                    supervisor.stopping()
                    daemon.signal(name)
                }
            }
            source.resume()
            signalSources.append(source)
        }
        // SIGHUP: the configuration file (and flags) read again off the loop, applied on it; then the
        // service's own settings (the webhook) follow an applied reload.
        supervisor.onReloadApplied = { configuration in
            applyWebhook(configuration, to: service, daemon: daemon, logger: logger)
        }
        signalSources.append(supervisor.handleSIGHUP { try options.run.configuration(environment: environment) })

        loop.execute {
            router.attach()
            daemon.start()
            // The feed's consumer counts for max_event_backlog once someone has acknowledged it.
            daemon.registerEventConsumerIfItHasAcknowledged(CCSDaemon.apiConsumer)
            applyWebhook(configuration, to: service, daemon: daemon, logger: logger)
            logger.info("API listening", ["listeners": names.joined(separator: ",")])
            supervisor.ready()
        }
        let code = exitCode.wait()
        signalSources.forEach { $0.cancel() }
        return code
    }

    /// The store for a service: as for `ccsd run`, except that the memory store keeps events for the feed
    /// (`ccsd run`'s drops them at once, having written them to its events file).
    static func openStore(_ configuration: Configuration,
                          migrationProgress: ((Int) -> Void)? = nil) throws(StoreError) -> any MessageStore {
        if configuration.store == .memory { return InMemoryMessageStore(configuration: configuration.storeConfiguration) }
        return try configuration.openStore(migrationProgress: migrationProgress)
    }

    /// While the store migrates its schema at start: the log line, and systemd's start timeout pushed out by
    /// `startExtensionSeconds` at every report (`EXTEND_TIMEOUT_USEC`, about every second), so a long
    /// migration is not killed as a hung start (and then started again, and killed again).
    static func startProgress(logger: Logger, notifier: SystemdNotifier) -> (Int) -> Void {
        let log = logger.storeMigrationLog()
        return { version in
            log(version)
            notifier.extendStartTimeout(seconds: startExtensionSeconds,
                                        status: "migrating the store to schema version \(version)")
        }
    }

    /// Seconds each migration report gives the start beyond `TimeoutStartSec=`: reports come about every
    /// second while SQLite works, but none while the migration's commit writes and syncs the rewritten tables.
    static let startExtensionSeconds = 120

    /// Starts, reloads or stops the webhook outlet to match `configuration` (`webhook_url` and its settings).
    /// Call on the loop. A token file that cannot be read is logged and leaves the webhook as it was.
    static func applyWebhook(_ configuration: Configuration, to service: ServiceBox, daemon: CCSDaemon, logger: Logger) {
        let settings: WebhookOutlet.Settings?
        do {
            settings = try WebhookOutlet.Settings(configuration: configuration)
        } catch {
            logger.error("webhook not changed: its configuration has a problem", ["error": error.description])
            return
        }
        switch (service.webhook, settings) {
        case (nil, nil): break
        case (nil, let settings?): service.webhook = daemon.startWebhook(settings, logger: logger)
        case (let webhook?, let settings?): webhook.reload(settings)
        case (let webhook?, nil):
            service.webhook = nil
            webhook.stop(then: {})
            // A webhook turned off no longer holds new messages back (its cursor stays in the store).
            daemon.unregisterEventConsumer(WebhookOutlet.consumer)
        }
    }
}

/// What the exit path needs of the service, set before the loop runs it; used on the loop only.
final class ServiceBox: @unchecked Sendable {
    var router: APIRouter?
    var server: HTTPServer?
    var webhook: WebhookOutlet?
}

/// The events sink of `ccsd serve`: events are read from the journal (`GET /v1/events`), not written to a file.
final class DiscardingEventSink: EventSink {
    func append(_ line: String) {}
    func flush() -> Bool { true }
    var failure: String? { nil }
}

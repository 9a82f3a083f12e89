import Daemon

extension CCSDaemon {
    /// Makes and starts the webhook outlet of this daemon's events journal, woken by every commit that
    /// journals events. Call on the loop, after `start()` (the store is open); stop it with
    /// `WebhookOutlet.stop()` before the daemon closes its store.
    public func startWebhook(_ settings: WebhookOutlet.Settings, logger: Logger) -> WebhookOutlet {
        let outlet = WebhookOutlet(settings: settings, journal: journalAccess, logger: logger)
        observeJournal { [outlet] seq in outlet.eventsJournaled(through: seq) }
        outlet.start()
        return outlet
    }
}

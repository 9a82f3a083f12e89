import Daemon

extension CCSDaemon {
    /// Makes and starts the webhook outlet of this daemon's events journal, woken by every commit that
    /// journals events. Call on the loop, after `start()` (the store is open); stop it with
    /// `WebhookOutlet.stop()` before the daemon closes its store.
    public func startWebhook(_ settings: WebhookOutlet.Settings, logger: Logger) -> WebhookOutlet {
        let journal = journalAccess
        // Registers the webhook's cursor at once (a no-op when it has one: cursors only move forward), so the
        // journal keeps what it has not delivered from now on.
        journal.acknowledge(WebhookOutlet.consumer, 0)
        registerEventConsumer(WebhookOutlet.consumer)
        let outlet = WebhookOutlet(settings: settings, journal: journal, logger: logger)
        observeJournal { [outlet] seq in outlet.eventsJournaled(through: seq) }
        outlet.start()
        return outlet
    }
}

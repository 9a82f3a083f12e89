import CCS

/// Upstream backpressure (docs/limits.md, `max_pending_upstream`): a connection owed that many ACKs (upstream
/// messages and receipts whose events are not yet recorded) is not read until they fall to half, so a
/// server flooding upstream faster than the store commits holds its writes in TCP instead of growing
/// ccsd's memory. Nothing is dropped: every stanza read is handed over and ACKed as usual.
extension CCSDaemon {
    /// After a stanza from `connection`: pauses reading it when it is owed `max_pending_upstream` ACKs.
    func pauseReadingIfOwed(_ connection: any XMPPConnection) {
        // No connection is owed more than all of them together: the usual case ends at this one read.
        guard dispatcher.acksOwedInAll >= configuration.maxPendingUpstream else { return }
        let id = connection.connectionID
        guard !readingPaused.contains(id), connections[id] === connection,
              dispatcher.acksOwed(on: id) >= configuration.maxPendingUpstream else { return }
        readingPaused.insert(id)
        connection.setReadingPaused(true)
        logger.warning("connection owes too many ACKs; reading paused until the store catches up",
                       ["connection": "\(id)", "acks_owed": "\(dispatcher.acksOwed(on: id))",
                        "max_pending_upstream": "\(configuration.maxPendingUpstream)"])
    }

    /// After records were confirmed (or a connection ended): resumes reading every paused connection owed
    /// at most half of `max_pending_upstream` ACKs, and forgets connections that are gone.
    func resumeReadingWhenPaid() {
        let threshold = configuration.maxPendingUpstream / 2
        for id in readingPaused {
            guard let connection = connections[id] else {
                readingPaused.remove(id)
                continue
            }
            if dispatcher.acksOwed(on: id) <= threshold {
                readingPaused.remove(id)
                connection.setReadingPaused(false)
                logger.info("connection reading resumed", ["connection": "\(id)", "acks_owed": "\(dispatcher.acksOwed(on: id))"])
            }
        }
    }
}

import CCS
import FoundationEssentials
import Daemon

/// Renders the daemon's metrics in the Prometheus text exposition format 0.0.4 (`GET /metrics`).
///
/// Every family has `# HELP` and `# TYPE` lines and the `ccsd_` prefix; names carry base units (`_seconds`)
/// and counters end in `_total`; label values are escaped (`\\`, `\"`, `\n`). Histograms have cumulative
/// `_bucket{le=…}` samples ending with `le="+Inf"`, then `_sum` and `_count`. The list of metrics, with
/// their labels and meaning, is in docs/api.md ("Metrics").
public enum MetricsExposition {
    /// The `Content-Type` of the rendered text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The exposition text of `metrics`, and of the webhook outlet when one runs.
    public static func render(_ metrics: DaemonMetrics, webhook: WebhookMetrics? = nil) -> String {
        var out = ExpositionWriter()
        let snapshot = metrics.snapshot
        let counters = snapshot.counters

        out.gauge("ccsd_build_info", "ccsd's version (always 1).", [(["version": CCSDVersion.string], 1)])
        out.gauge("ccsd_lifecycle_state", "The daemon's lifecycle state (1 for the current one).",
                  ["idle", "starting", "running", "stopping", "closing", "stopped"].map { (["state": $0], snapshot.lifecycle == $0 ? 1 : 0) })

        // Messages by outcome.
        out.counter("ccsd_messages_accepted_total", "Downstream messages stored and accepted.", counters.accepted)
        out.counter("ccsd_messages_rejected_total", "Submissions refused, by whether the submitter may send them again later.",
                    [(["retryable": "false"], Double(counters.rejected - counters.rejectedRetryable)),
                     (["retryable": "true"], Double(counters.rejectedRetryable))])
        out.counter("ccsd_messages_sent_total", "Downstream stanzas written to CCS (resends included).", counters.sent)
        out.counter("ccsd_messages_acked_total", "Downstream messages CCS acked (final).", counters.acked)
        var nacks: [([String: String], Double)] = []
        for (code, tally) in counters.nacksByCode.sorted(by: { $0.key < $1.key }) {
            nacks.append((["code": code, "final": "true"], Double(tally.final)))
            nacks.append((["code": code, "final": "false"], Double(tally.retried)))
        }
        out.counter("ccsd_messages_nacked_total",
                    "Nacks and stanza errors resolving a downstream message, by error code; final=\"false\" ones are retried.", nacks)
        out.counter("ccsd_messages_expired_total", "Downstream messages whose time_to_live ran out before an ack (final).", counters.expired)

        // Queue and windows.
        out.gauge("ccsd_messages_outstanding", "Messages submitted and not yet out (persisting, queued, in flight, retrying, finalizing).",
                  Double(snapshot.outstanding))
        out.gauge("ccsd_messages_queued", "Accepted messages waiting for a window (not in flight, not final).", Double(snapshot.queued))
        out.gauge("ccsd_messages_in_flight", "Downstream messages sent and not yet acked or nacked, over every connection.",
                  Double(snapshot.inFlight))
        let connectionLabels = snapshot.connections.map { ["connection": "\($0.id)", "endpoint": $0.endpoint.description] }
        out.gauge("ccsd_connection_in_flight", "Downstream messages in flight on one connection.",
                  zip(connectionLabels, snapshot.connections).map { ($0, Double($1.inFlight)) })
        out.gauge("ccsd_connection_window", "The most messages one connection may have in flight (its window).",
                  zip(connectionLabels, snapshot.connections).map { ($0, Double($1.window)) })
        out.gauge("ccsd_connections", "Open connections by state.",
                  [DaemonSnapshot.Connection.State.connecting, .ready, .draining].map { state in
                      (["state": state.rawValue], Double(snapshot.connections.filter { $0.state == state }.count))
                  })

        // Connections over time.
        out.counter("ccsd_drains_total", "CONNECTION_DRAINING received (control message or nack).", counters.drains)
        out.counter("ccsd_reconnects_total", "Connections opened at once after a healthy connection dropped or drained.", counters.reconnects)
        out.counter("ccsd_connection_failures_total", "Connections that failed to log in or dropped soon after (each backs off).",
                    counters.failedConnections)
        out.counter("ccsd_connections_refused_total", "Connections the server refused with a condition reconnecting cannot heal.",
                    counters.refusedConnections)
        out.counter("ccsd_ack_timeouts_total", "Connections dropped because an ack did not come within ack_timeout_seconds.",
                    counters.ackTimeouts)

        // Upstream.
        out.counter("ccsd_upstream_messages_total", "Upstream messages handed over (redeliveries not counted).", counters.upstream)
        out.counter("ccsd_receipts_total", "Delivery receipts handed over (redeliveries not counted).", counters.receipts)
        out.counter("ccsd_upstream_duplicates_total", "Redelivered upstream messages and receipts, ACKed and not handed over again.",
                    counters.upstreamDuplicates)
        out.counter("ccsd_acks_dropped_total", "ACKs not sent because their connection ended first (CCS redelivers).", counters.acksDropped)
        out.counter("ccsd_ack_errors_total", "Errors the server returned about an ACK ccsd sent.", counters.ackErrors)
        out.counter("ccsd_unmatched_resolutions_total", "Acks, nacks and stanza errors for nothing in flight on their connection.",
                    counters.unmatchedResolutions)
        out.counter("ccsd_unknown_messages_total", "CCS messages of an unknown message_type or control_type, ignored.",
                    [(["kind": "message_type"], Double(counters.unknownMessageTypes)),
                     (["kind": "control_type"], Double(counters.unknownControlTypes))])
        out.counter("ccsd_unreadable_messages_total", "CCS messages that could not be read (nothing to ACK them by).",
                    metrics.unreadableMessages)

        // Latencies and the store.
        out.histogram("ccsd_ack_latency_seconds", "Seconds from a message's acceptance to its ack (across restarts).", metrics.ackLatency)
        out.histogram("ccsd_store_commit_seconds", "Seconds per store commit (one transaction of a loop turn's writes).",
                      metrics.storeCommitLatency)
        out.gauge("ccsd_store_writable", "1 when the store takes writes, 0 while it is unavailable.", snapshot.storeWritable ? 1 : 0)

        if let webhook { webhook.render(into: &out) }
        return out.text
    }

    /// A label value with `\`, `"` and newlines escaped, as the format requires.
    public static func escapeLabelValue(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// Builds exposition text one metric family at a time.
struct ExpositionWriter {
    private(set) var text = ""

    mutating func counter(_ name: String, _ help: String, _ value: Int) {
        family(name, "counter", help, [([:], Double(value))])
    }

    mutating func counter(_ name: String, _ help: String, _ samples: [([String: String], Double)]) {
        family(name, "counter", help, samples)
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        family(name, "gauge", help, [([:], value)])
    }

    mutating func gauge(_ name: String, _ help: String, _ samples: [([String: String], Double)]) {
        family(name, "gauge", help, samples)
    }

    mutating func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
        header(name, "histogram", help)
        let cumulative = histogram.cumulativeCounts
        for (index, bound) in histogram.bounds.enumerated() {
            sample(name + "_bucket", ["le": MetricsExposition.format(bound)], Double(cumulative[index]))
        }
        sample(name + "_bucket", ["le": "+Inf"], Double(histogram.count))
        sample(name + "_sum", [:], histogram.sum)
        sample(name + "_count", [:], Double(histogram.count))
    }

    private mutating func family(_ name: String, _ type: String, _ help: String, _ samples: [([String: String], Double)]) {
        header(name, type, help)
        for (labels, value) in samples { sample(name, labels, value) }
    }

    private mutating func header(_ name: String, _ type: String, _ help: String) {
        var escaped = ""  // backslash and line feed escaped, scalar by scalar (a CR LF's LF too)
        for scalar in help.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        text += "# HELP \(name) \(escaped)\n# TYPE \(name) \(type)\n"
    }

    /// One sample line; labels in name order (`le` last, as clients write it).
    private mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        text += name
        if !labels.isEmpty {
            let ordered = labels.sorted { ($0.key == "le" ? 1 : 0, $0.key) < ($1.key == "le" ? 1 : 0, $1.key) }
            text += "{" + ordered.map { "\($0.key)=\"\(MetricsExposition.escapeLabelValue($0.value))\"" }.joined(separator: ",") + "}"
        }
        text += " " + MetricsExposition.format(value) + "\n"
    }
}

extension CCSDaemon {
    /// `GET /metrics`'s body: the daemon's metrics (and `webhook`'s, when given) as Prometheus text 0.0.4
    /// (`MetricsExposition.contentType`). Call on the loop.
    public func metricsText(webhook: WebhookOutlet? = nil) -> String {
        MetricsExposition.render(metrics(), webhook: webhook?.metrics())
    }
}

import CCS

/// What the webhook outlet does after one POST: a pure decision, tested without sockets.
///
/// - 2xx: delivered; the cursor moves past the batch.
/// - 408, 429, 5xx, a connection error or a timeout: transient; the same batch is POSTed again after
///   `transient.delay(attempt: failures)`.
/// - any other status (4xx, 1xx, 3xx): a configuration problem (wrong URL, token, or a receiver that refuses
///   the shape); logged as such and retried slowly (`configuration.delay(attempt: failures)`). Never dropped:
///   the outlet is at-least-once and in order, so nothing after the batch goes out before it.
///
/// Delays (`Backoff`: `min(cap, base · 2^(n−1)) · (1 ± jitter)`), with the defaults, seconds:
///
///     failures n:      1        2        3        4        5        6        7+
///     transient:       0.8–1.2  1.6–2.4  3.2–4.8  6.4–9.6  12.8–19.2 25.6–38.4 48–60
///     configuration:   24–36    48–72    96–144   192–288  384–576   480–600   480–600
public struct WebhookRetryPolicy: Sendable, Equatable {
    /// The outcome of one POST.
    public enum Attempt: Sendable, Equatable {
        /// The receiver answered with this HTTP status.
        case status(Int)
        /// No answer: connection refused, DNS, TLS, or the timeout (libcurl's message).
        case transportError(String)
    }

    /// Why a POST failed.
    public enum Failure: String, Sendable, Equatable {
        /// Worth retrying soon.
        case transient
        /// The receiver refuses the request as made: an operator must fix the URL, token or receiver.
        case configuration
    }

    /// What to do next.
    public enum Verdict: Sendable, Equatable {
        /// The batch is delivered: acknowledge it and go on.
        case delivered
        /// POST the same batch again after `seconds`.
        case retry(after: Double, failure: Failure)
    }

    /// Backoff after transient failures. Default 1 s doubling to 60 s, ±20 %.
    public var transient: Backoff
    /// Backoff after configuration failures. Default 30 s doubling to 600 s, ±20 %.
    public var configuration: Backoff

    public init(transient: Backoff = Backoff(base: 1, cap: 60, jitter: 0.2),
                configuration: Backoff = Backoff(base: 30, cap: 600, jitter: 0.2)) {
        self.transient = transient
        self.configuration = configuration
    }

    /// The class of `attempt`: nil when it delivered the batch.
    public static func classify(_ attempt: Attempt) -> Failure? {
        switch attempt {
        case .status(let code) where (200...299).contains(code): nil
        case .status(408), .status(429): .transient
        case .status(let code) where (500...599).contains(code): .transient
        case .status: .configuration
        case .transportError: .transient
        }
    }

    /// The verdict on `attempt`, the `failures`-th failure in a row of this batch when it failed (1-based),
    /// for a jitter draw `u` in [-1, 1].
    public func verdict(_ attempt: Attempt, failures: Int, u: Double) -> Verdict {
        guard let failure = Self.classify(attempt) else { return .delivered }
        let backoff = failure == .transient ? transient : configuration
        return .retry(after: backoff.delay(attempt: failures, u: u), failure: failure)
    }
}

import FoundationEssentials
import Glibc

/// The signals ccsd handles (SIGTERM, SIGINT, SIGHUP) blocked in the calling thread, and so in every thread
/// it starts afterwards (threads inherit the mask, pthread_sigmask(3)).
///
/// Why: libdispatch's signal sources on Linux read a signalfd and block the signal only in their own
/// thread. A signal the kernel hands to any other thread is then handled by that thread's disposition:
/// the `SIG_IGN` set before the source (so the default action does not kill the process) discards it.
/// A SIGTERM sent while ccsd starts up was lost that way (seen under AddressSanitizer, whose slower start
/// widened the window). Blocked in every thread, the signal stays pending until the signalfd reads it.
/// Call first thing, before any thread is started (the event loop, the store writer, the intake reader).
public enum SignalMask {
    /// The signals ccsd turns into events: stop gracefully (SIGTERM, SIGINT), reload (SIGHUP).
    public static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks `handled` in the calling thread (and the threads it starts from now on).
    public static func blockHandledSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handled { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Whether `signal` is blocked in the calling thread.
    public static func isBlocked(_ signal: Int32) -> Bool {
        var current = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &current)
        return sigismember(&current, signal) == 1
    }
}

import COpenSSL

/// OpenSSL's thread-local error queue, read and cleared at the boundary.
///
/// Every SSL call is preceded by `clear()` and its failure is turned into text with `drain()`,
/// all inside one block on the loop, so errors never leak between calls or connections.
public enum OpenSSLErrorQueue {
    /// Empties the queue. Before every SSL call, so it is usually empty already: `ERR_peek_error` says so for a
    /// look at the queue's ends, where `ERR_clear_error` visits all of its slots (about 840 instructions).
    public static func clear() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Takes every queued error as `ERR_error_string_n` text joined by "; ", emptying the queue.
    /// - Returns: the text, or `fallback` if the queue was empty.
    public static func drain(fallback: String = "unknown OpenSSL error") -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return parts.isEmpty ? fallback : parts.joined(separator: "; ")
    }

    /// A `TLSError` of `kind` whose reason is `context` followed by the drained queue text.
    public static func error(_ kind: TLSError.Kind, host: String? = nil, _ context: String) -> TLSError {
        TLSError(kind, host: host, reason: "\(context): \(drain())")
    }
}

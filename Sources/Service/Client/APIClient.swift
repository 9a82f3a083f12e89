import CCurl
import CCS
import Daemon
import FoundationEssentials
import Glibc

/// Where a running `ccsd serve` answers: its Unix socket (no token: the socket's mode and group are the access
/// control) or a TCP URL with a bearer token (docs/api.md).
public enum APIEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// The API's Unix socket, e.g. `/run/ccsd/api.sock`.
    case unixSocket(path: String)
    /// `http://HOST:PORT` (no trailing slash) and the token sent as `Authorization: Bearer TOKEN`.
    case tcp(baseURL: String, token: String?)

    /// The default socket of `ccsd serve` (`--api-socket`).
    public static let defaultSocketPath = "/run/ccsd/api.sock"

    /// The socket path or the URL, as error messages name it.
    public var description: String {
        switch self {
        case .unixSocket(let path): path
        case .tcp(let baseURL, _): baseURL
        }
    }
}

/// One HTTP answer of the API.
public struct APIResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Response headers, names in lower case (the last one wins when repeated).
    public var headers: [String: String]
    /// The body as received.
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as JSON, nil when it is not JSON.
    public var json: JSONValue? { try? JSONValue.parse(body) }

    /// The API's error object (`{"error":{"status","code","message"}}`) as one line, e.g.
    /// `HTTP 503 unavailable: the queue is full (retry after 5 s)`; for a body that is not such an object, the
    /// status and the start of the body.
    public var errorSummary: String {
        var text = "HTTP \(status)"
        if let error = json?["error"] {
            if let code = error["code"]?.stringValue { text += " " + code }
            if let message = error["message"]?.stringValue { text += ": " + message }
        } else if !body.isEmpty {
            let start = String(decoding: body.prefix(200), as: UTF8.self).trimmingWhitespace()
            text += ": " + start
        }
        if let retryAfter = headers["retry-after"] { text += " (retry after \(retryAfter) s)" }
        return text
    }
}

/// Why a request got no HTTP answer. The message names the endpoint and what to check.
public struct APIClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Nothing accepted the connection (no socket, refused, permission denied, no route).
        case unreachable
        /// No complete answer within the request's timeout.
        case timeout
        /// Anything else (the connection broke, the answer was not HTTP, the body was too large).
        case failed
    }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// A blocking HTTP/1.1 client of the API on Debian's libcurl: one request at a time, over the Unix socket
/// (`CURLOPT_UNIX_SOCKET_PATH`) or TCP. Proxies from the environment are ignored (the API is local).
public struct APIClient: Sendable {
    public var endpoint: APIEndpoint
    /// Seconds to wait for the connection (socket connect; TCP handshake).
    public var connectTimeout: Double
    /// Seconds a request may take in all, unless the request says otherwise (long polls add their wait).
    public var requestTimeout: Double
    /// Bytes of response body taken at most; a larger answer fails the request.
    public var maxBodyBytes = 64 << 20

    public init(endpoint: APIEndpoint, connectTimeout: Double = 5, requestTimeout: Double = 30) {
        self.endpoint = endpoint
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
    }

    /// Sends one request and returns the answer, whatever its status.
    /// - Parameters:
    ///   - method: `GET` or `POST`.
    ///   - path: the request target, e.g. `/v1/events?after=4&wait=30` (already percent-encoded).
    ///   - body: the request body (POST), sent with `Content-Type: contentType`.
    ///   - timeout: seconds for the whole request (default `requestTimeout`).
    /// - Throws: `APIClientError` when no HTTP answer came: unreachable, timed out, or failed.
    public func request(_ method: String, _ path: String, body: Data? = nil, contentType: String = "application/json",
                        timeout: Double? = nil) throws(APIClientError) -> APIResponse {
        guard let handle = ccsd_curl_easy_init() else {
            let reason = ccsd_curl_load().map { String(cString: $0) } ?? "libcurl could not create a handle"
            throw APIClientError(kind: .failed, message: reason)
        }
        defer { ccsd_curl_easy_cleanup(handle) }
        let sink = ResponseSink(limit: maxBodyBytes)
        let url: String
        var headerLines = ["Accept: application/json"]
        switch endpoint {
        case .unixSocket(let socketPath):
            // The host is not looked up: the socket carries the request; `localhost` is the Host header.
            url = "http://localhost" + path
            _ = ccsd_curl_setopt_string(handle, CURLOPT_UNIX_SOCKET_PATH, socketPath)
        case .tcp(let baseURL, let token):
            url = baseURL + path
            if let token { headerLines.append("Authorization: Bearer " + token) }
        }
        if body != nil { headerLines.append("Content-Type: " + contentType) }
        // No `Expect: 100-continue` round trip for larger bodies.
        headerLines.append("Expect:")
        var headers: UnsafeMutablePointer<curl_slist>?
        for line in headerLines { headers = ccsd_curl_slist_append(headers, line) }
        defer { ccsd_curl_slist_free_all(headers) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
            _ = ccsd_curl_setopt_string(handle, CURLOPT_URL, url)
            _ = ccsd_curl_setopt_string(handle, CURLOPT_PROXY, "")
            _ = ccsd_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = ccsd_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout * 1000))
            _ = ccsd_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int((timeout ?? requestTimeout) * 1000))
            _ = ccsd_curl_setopt_string(handle, CURLOPT_USERAGENT, "ccsd/\(CCSDVersion.string)")
            _ = ccsd_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
            _ = ccsd_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorPointer.baseAddress)
            let context = Unmanaged.passUnretained(sink).toOpaque()
            _ = ccsd_curl_setopt_write_function(handle, { data, size, count, context in
                let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
                return sink.appendBody(data, size * count)
            })
            _ = ccsd_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
            _ = ccsd_curl_setopt_header_function(handle, { data, size, count, context in
                let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
                sink.appendHeader(data, size * count)
                return size * count
            })
            _ = ccsd_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
            if method == "POST" {
                _ = ccsd_curl_setopt_long(handle, CURLOPT_POST, 1)
            } else if method != "GET" {
                _ = ccsd_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
            }
            guard let body else { return ccsd_curl_easy_perform(handle) }
            // CURLOPT_POSTFIELDS does not copy: the bytes stay alive until curl_easy_perform returns.
            return body.withUnsafeBytes { bytes in
                _ = ccsd_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
                _ = ccsd_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                return ccsd_curl_easy_perform(handle)
            }
        }
        guard code == CURLE_OK else {
            var osErrno = 0
            _ = ccsd_curl_getinfo_long(handle, CURLINFO_OS_ERRNO, &osErrno)
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw APIClient.describe(code: code, osErrno: Int32(osErrno), detail: detail, endpoint: endpoint,
                                     timeout: timeout ?? requestTimeout, overLimit: sink.overLimit)
        }
        var status = 0
        _ = ccsd_curl_response_code(handle, &status)
        return APIResponse(status: status, headers: sink.headers, body: sink.body)
    }

    /// The error for a failed transfer: what happened at which endpoint, and what to check.
    static func describe(code: CURLcode, osErrno: Int32, detail: String, endpoint: APIEndpoint, timeout: Double,
                         overLimit: Bool) -> APIClientError {
        let place = "ccsd at \(endpoint)"
        let hint: String = switch endpoint {
        case .unixSocket: "is `ccsd serve` running? (--api-socket PATH or CCSD_API_SOCKET names another socket)"
        case .tcp: "is `ccsd serve` running with --api-listen? (--api-url names another address)"
        }
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST:
            let reason: String = switch osErrno {
            case ECONNREFUSED: "connection refused"
            case ENOENT: "no such socket"
            case EACCES, EPERM:
                "permission denied; the socket is for its owner and group (add your user to the socket's group)"
            case 0: detail.isEmpty ? "cannot connect" : detail
            default: String(cString: strerror(osErrno)).lowercased()
            }
            let tail = (osErrno == EACCES || osErrno == EPERM) ? "" : "; \(hint)"
            return APIClientError(kind: .unreachable, message: "cannot reach \(place): \(reason)\(tail)")
        case CURLE_OPERATION_TIMEDOUT:
            return APIClientError(kind: .timeout, message: "\(place) did not answer within \(formatSeconds(timeout)) s")
        case CURLE_GOT_NOTHING:
            return APIClientError(kind: .failed, message: "\(place) closed the connection without an answer")
        case CURLE_WRITE_ERROR where overLimit:
            return APIClientError(kind: .failed, message: "the answer of \(place) is larger than the client takes")
        default:
            let reason = detail.isEmpty ? String(cString: ccsd_curl_easy_strerror(code)) : detail
            return APIClientError(kind: .failed, message: "request to \(place) failed: \(reason)")
        }
    }

    static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

}

/// Collects one response's body and headers inside `curl_easy_perform` (callbacks run on the calling thread).
private final class ResponseSink {
    var body = Data()
    var headers: [String: String] = [:]
    var overLimit = false
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Returns the bytes taken; fewer than `count` makes libcurl stop with CURLE_WRITE_ERROR.
    func appendBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return 0 }
        if body.count + count > limit {
            overLimit = true
            return 0
        }
        body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: count)
        return count
    }

    func appendHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) {
        guard let data, count > 0 else { return }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]  // a new response (after a redirect or 100 Continue)
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        headers[name] = line[line.index(after: colon)...].trimmingWhitespace()
    }
}

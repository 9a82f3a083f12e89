import FoundationEssentials

/// One HTTP request as the server hands it to its handler: the whole body is read first (up to the body limit).
public struct HTTPRequest: Sendable {
    /// `GET`, `POST`, …
    public let method: String
    /// The path without the query string, percent-decoded once (by libmicrohttpd; a `%00` ends it), e.g.
    /// `/v1/messages/m-1` for `/v1/messages/m%2D1`.
    public let path: String
    /// Query parameters, decoded (the last one wins when a name repeats).
    public let query: [String: String]
    /// Header fields by lowercased name (the last one wins when a name repeats).
    public let headers: [String: String]
    /// The body (empty when none).
    public let body: Data
    /// The listener the request came in on (`HTTPServer.Listener.name`).
    public let listener: String

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: Data = Data(), listener: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.listener = listener
    }

    /// The header field `name` (any case), or nil.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// An HTTP response: status, header fields (in order) and body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data

    public init(status: Int, headers: [(String, String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`application/json; charset=utf-8`) whose body is `json`, already serialized.
    public static func json(_ status: Int, _ json: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers,
                     body: Data((json + "\n").utf8))
    }

    /// The error object of the API: `{"error":{"status":S,"code":"C","message":"M"}}` (docs/api.md, "Errors").
    public static func error(_ status: Int, code: String, message: String, headers: [(String, String)] = []) -> HTTPResponse {
        json(status, "{\"error\":{\"status\":\(status),\"code\":\(jsonString(code)),\"message\":\(jsonString(message))}}",
             headers: headers)
    }

    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.map { $0.0 + ":" + $0.1 } == rhs.headers.map { $0.0 + ":" + $0.1 }
    }

    /// `text` as a JSON string literal (quotes, backslashes and control characters escaped; RFC 8259 §7).
    public static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Answers one request, now or later (a long poll, a submission waiting for its commit). Confined to the
/// server's loop; the first `respond` wins, later ones are ignored.
public final class HTTPResponder: @unchecked Sendable {
    // @unchecked Sendable: used only on the server's loop.
    private var send: ((HTTPResponse) -> Void)?

    init(_ send: @escaping (HTTPResponse) -> Void) { self.send = send }

    /// Sends `response`. Call on the server's loop; once.
    public func respond(_ response: HTTPResponse) {
        guard let send else { return }
        self.send = nil
        send(response)
    }

    /// Whether a response was sent.
    public var hasResponded: Bool { send == nil }
}

import CMicroHTTPD
import TLS

/// An HTTP server on an `EventLoop`, built on GNU libmicrohttpd (not built yet).
public enum HTTPServerPlaceholder {}

import Dispatch

extension EventLoop {
    /// The loop's serial queue, for Dispatch sources that other modules attach to the loop (the HTTP
    /// server's epoll source and timer). Work put on it runs on the loop.
    public var dispatchQueue: DispatchQueue { queue }
}

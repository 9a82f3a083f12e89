import Dispatch

extension EventLoop {
    /// The loop's serial queue, for Dispatch sources that other modules attach to the loop (the HTTP
    /// server's epoll source and timer). Work put on it runs on the loop.
    /// Not for a loop with `Backend.epoll` (its work runs on its own thread, not on this queue): traps.
    public var dispatchQueue: DispatchQueue {
        precondition(reactor == nil, "dispatchQueue of an epoll event loop")
        return queue
    }
}

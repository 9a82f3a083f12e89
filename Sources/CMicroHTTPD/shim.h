#ifndef CCSD_CMICROHTTPD_SHIM_H
#define CCSD_CMICROHTTPD_SHIM_H
// GNU libmicrohttpd (Debian's libmicrohttpd-dev) for the HTTPServer module. Swift cannot call C variadic
// functions (MHD_start_daemon, MHD_get_daemon_info), so small non-variadic wrappers live here.
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Starts a daemon without its own thread (the caller polls its epoll fd and calls MHD_run) on the
/// listening socket `listen_fd` (bound and listening already), with the given limits; `completed` is called
/// once per request when MHD is done with it.
static inline struct MHD_Daemon *ccsd_mhd_start(unsigned int flags, int listen_fd,
                                                MHD_AccessHandlerCallback handler, void *handler_cls,
                                                MHD_RequestCompletedCallback completed, void *completed_cls,
                                                unsigned int connection_limit, unsigned int timeout_seconds,
                                                size_t memory_limit) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_END);
}

/// The daemon's epoll fd (MHD_USE_EPOLL), or -1.
static inline int ccsd_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info == NULL ? -1 : info->epoll_fd;
}

/// Milliseconds until MHD_run must be called again, or -1 when MHD has no timeout pending.
static inline long long ccsd_mhd_timeout_ms(struct MHD_Daemon *daemon) {
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    if (MHD_get_timeout(daemon, &timeout) != MHD_YES) return -1;
    return (long long)timeout;
}

#endif

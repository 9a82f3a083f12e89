#ifndef CCSD_MHD_H
#define CCSD_MHD_H
// GNU libmicrohttpd (Debian's libmicrohttpd12), loaded with dlopen(3) the first time a server starts: the HTTP
// API of `ccsd serve`. `ccsd run` and the CLI never load it, nor what it pulls in (GnuTLS, p11-kit, nettle,
// GMP, libidn2, libunistring, …), about 2.5 MiB resident. <microhttpd.h> gives the types and constants only;
// nothing here links libmicrohttpd.
//
// MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot call: non-variadic wrappers live
// here. Every other function keeps MHD's signature under a `ccsd_mhd_` name.
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// The library's file name, as dlopen(3) is given it.
#define CCSD_MHD_LIBRARY "libmicrohttpd.so.12"

/// Loads libmicrohttpd.so.12 once per process (thread-safe). Returns NULL when it is ready, else why it
/// could not be loaded (dlerror's text, or a missing symbol), naming the library.
const char *ccsd_mhd_load(void);

/// Starts a daemon without its own thread (the caller polls its epoll fd and calls ccsd_mhd_run) on the
/// listening socket `listen_fd` (bound and listening already), with the given limits; `completed` is called
/// once per request when MHD is done with it. NULL when MHD refuses, or when the library is not loaded
/// (ask `ccsd_mhd_load` why).
struct MHD_Daemon *ccsd_mhd_start(unsigned int flags, int listen_fd,
                                  MHD_AccessHandlerCallback handler, void *handler_cls,
                                  MHD_RequestCompletedCallback completed, void *completed_cls,
                                  unsigned int connection_limit, unsigned int timeout_seconds,
                                  size_t memory_limit);

/// The daemon's epoll fd (MHD_USE_EPOLL), or -1.
int ccsd_mhd_epoll_fd(struct MHD_Daemon *daemon);

/// Milliseconds until ccsd_mhd_run must be called again, or -1 when MHD has no timeout pending.
long long ccsd_mhd_timeout_ms(struct MHD_Daemon *daemon);

// The rest take a daemon, connection or response that only exists after a successful load.
enum MHD_Result ccsd_mhd_run(struct MHD_Daemon *daemon);
void ccsd_mhd_stop_daemon(struct MHD_Daemon *daemon);
const char *ccsd_mhd_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                             const char *key);
int ccsd_mhd_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                   MHD_KeyValueIterator iterator, void *iterator_cls);
struct MHD_Response *ccsd_mhd_create_response_from_buffer(size_t size, void *buffer,
                                                          enum MHD_ResponseMemoryMode mode);
enum MHD_Result ccsd_mhd_add_response_header(struct MHD_Response *response, const char *header,
                                             const char *content);
enum MHD_Result ccsd_mhd_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                        struct MHD_Response *response);
void ccsd_mhd_destroy_response(struct MHD_Response *response);
void ccsd_mhd_suspend_connection(struct MHD_Connection *connection);
void ccsd_mhd_resume_connection(struct MHD_Connection *connection);

#endif

// libmicrohttpd through dlopen(3): see include/ccsd_mhd.h.
#include "ccsd_mhd.h"
#include "ccsd_dl.h"

#include <pthread.h>

static struct {
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
    enum MHD_Result (*get_timeout)(struct MHD_Daemon *, MHD_UNSIGNED_LONG_LONG *);
    enum MHD_Result (*run)(struct MHD_Daemon *);
    void (*stop_daemon)(struct MHD_Daemon *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
    int (*get_connection_values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    void (*suspend_connection)(struct MHD_Connection *);
    void (*resume_connection)(struct MHD_Connection *);
} mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct ccsd_dl dl;

static void load(void) {
    if (!ccsd_dl_open(&dl, CCSD_MHD_LIBRARY, "libmicrohttpd")) return;
    mhd.start_daemon = ccsd_dl_find(&dl, "MHD_start_daemon");
    mhd.get_daemon_info = ccsd_dl_find(&dl, "MHD_get_daemon_info");
    mhd.get_timeout = ccsd_dl_find(&dl, "MHD_get_timeout");
    mhd.run = ccsd_dl_find(&dl, "MHD_run");
    mhd.stop_daemon = ccsd_dl_find(&dl, "MHD_stop_daemon");
    mhd.lookup_connection_value = ccsd_dl_find(&dl, "MHD_lookup_connection_value");
    mhd.get_connection_values = ccsd_dl_find(&dl, "MHD_get_connection_values");
    mhd.create_response_from_buffer = ccsd_dl_find(&dl, "MHD_create_response_from_buffer");
    mhd.add_response_header = ccsd_dl_find(&dl, "MHD_add_response_header");
    mhd.queue_response = ccsd_dl_find(&dl, "MHD_queue_response");
    mhd.destroy_response = ccsd_dl_find(&dl, "MHD_destroy_response");
    mhd.suspend_connection = ccsd_dl_find(&dl, "MHD_suspend_connection");
    mhd.resume_connection = ccsd_dl_find(&dl, "MHD_resume_connection");
}

const char *ccsd_mhd_load(void) {
    pthread_once(&once, load);
    return dl.error;
}

struct MHD_Daemon *ccsd_mhd_start(unsigned int flags, int listen_fd,
                                  MHD_AccessHandlerCallback handler, void *handler_cls,
                                  MHD_RequestCompletedCallback completed, void *completed_cls,
                                  unsigned int connection_limit, unsigned int timeout_seconds,
                                  size_t memory_limit) {
    if (ccsd_mhd_load() != NULL) return NULL;
    return mhd.start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_END);
}

int ccsd_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info == NULL ? -1 : info->epoll_fd;
}

long long ccsd_mhd_timeout_ms(struct MHD_Daemon *daemon) {
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    if (mhd.get_timeout(daemon, &timeout) != MHD_YES) return -1;
    return (long long)timeout;
}

enum MHD_Result ccsd_mhd_run(struct MHD_Daemon *daemon) { return mhd.run(daemon); }
void ccsd_mhd_stop_daemon(struct MHD_Daemon *daemon) { mhd.stop_daemon(daemon); }
const char *ccsd_mhd_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                             const char *key) {
    return mhd.lookup_connection_value(connection, kind, key);
}
int ccsd_mhd_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                   MHD_KeyValueIterator iterator, void *iterator_cls) {
    return mhd.get_connection_values(connection, kind, iterator, iterator_cls);
}
struct MHD_Response *ccsd_mhd_create_response_from_buffer(size_t size, void *buffer,
                                                          enum MHD_ResponseMemoryMode mode) {
    return mhd.create_response_from_buffer(size, buffer, mode);
}
enum MHD_Result ccsd_mhd_add_response_header(struct MHD_Response *response, const char *header,
                                             const char *content) {
    return mhd.add_response_header(response, header, content);
}
enum MHD_Result ccsd_mhd_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                        struct MHD_Response *response) {
    return mhd.queue_response(connection, status_code, response);
}
void ccsd_mhd_destroy_response(struct MHD_Response *response) { mhd.destroy_response(response); }
void ccsd_mhd_suspend_connection(struct MHD_Connection *connection) { mhd.suspend_connection(connection); }
void ccsd_mhd_resume_connection(struct MHD_Connection *connection) { mhd.resume_connection(connection); }

// libsystemd through dlopen(3): see include/ccsd_systemd.h.
#include "ccsd_systemd.h"
#include "ccsd_dl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static struct {
    int (*notify)(int, const char *);
    int (*watchdog_enabled)(int, uint64_t *);
    int (*listen_fds)(int);
} systemd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct ccsd_dl dl;

static void load(void) {
    if (!ccsd_dl_open(&dl, CCSD_SYSTEMD_LIBRARY, "libsystemd")) return;
    systemd.notify = ccsd_dl_find(&dl, "sd_notify");
    systemd.watchdog_enabled = ccsd_dl_find(&dl, "sd_watchdog_enabled");
    systemd.listen_fds = ccsd_dl_find(&dl, "sd_listen_fds");
}

const char *ccsd_systemd_load(void) {
    pthread_once(&once, load);
    return dl.error;
}

int ccsd_systemd_wanted(void) {
    return getenv("NOTIFY_SOCKET") != NULL || getenv("WATCHDOG_USEC") != NULL || getenv("LISTEN_PID") != NULL;
}

int ccsd_sd_notify(int unset_environment, const char *state) {
    if (getenv("NOTIFY_SOCKET") == NULL) return 0;  // sd_notify(3): "If $NOTIFY_SOCKET is not set, ... 0"
    if (ccsd_systemd_load() != NULL) return -ELIBACC;
    return systemd.notify(unset_environment, state);
}

int ccsd_sd_watchdog_enabled(int unset_environment, uint64_t *usec) {
    if (getenv("WATCHDOG_USEC") == NULL) {  // disabled: 0; the variables go as libsystemd's would
        if (unset_environment) {
            unsetenv("WATCHDOG_USEC");
            unsetenv("WATCHDOG_PID");
        }
        return 0;
    }
    if (ccsd_systemd_load() != NULL) return -ELIBACC;
    return systemd.watchdog_enabled(unset_environment, usec);
}

int ccsd_sd_listen_fds(int unset_environment) {
    if (getenv("LISTEN_PID") == NULL) {  // not socket-activated: 0; the variables go as libsystemd's would
        if (unset_environment) {
            unsetenv("LISTEN_PID");
            unsetenv("LISTEN_FDS");
            unsetenv("LISTEN_FDNAMES");
        }
        return 0;
    }
    if (ccsd_systemd_load() != NULL) return -ELIBACC;
    return systemd.listen_fds(unset_environment);
}

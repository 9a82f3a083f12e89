#ifndef CCSD_CSYSTEMD_SHIM_H
#define CCSD_CSYSTEMD_SHIM_H
// libsystemd (Debian's libsystemd-dev): sd_notify, sd_listen_fds, sd_watchdog_enabled for the Service module.
#include <systemd/sd-daemon.h>

#endif

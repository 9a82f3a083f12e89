#ifndef CCSD_SYSTEMD_H
#define CCSD_SYSTEMD_H
// libsystemd (Debian's libsystemd0), loaded with dlopen(3) only when the environment says that systemd runs
// this process (NOTIFY_SOCKET, WATCHDOG_USEC or LISTEN_PID set): sd_notify, sd_watchdog_enabled and
// sd_listen_fds for `ccsd serve`. Anywhere else (`ccsd run`, the CLI, a shell) it is never mapped, nor what
// it pulls in (libgcrypt, libgpg-error, libzstd, liblz4, libcap), about 0.8 MiB resident.
// <systemd/sd-daemon.h> gives the declarations and constants only; nothing here links libsystemd.
//
// Each wrapper answers as libsystemd does when its variable is unset (0, nothing sent) without loading it.
#include <stdint.h>
#include <systemd/sd-daemon.h>

/// The library's file name, as dlopen(3) is given it.
#define CCSD_SYSTEMD_LIBRARY "libsystemd.so.0"

/// Whether the environment names systemd (NOTIFY_SOCKET, WATCHDOG_USEC or LISTEN_PID set): the wrappers
/// below then need the library.
int ccsd_systemd_wanted(void);

/// Loads libsystemd.so.0 once per process (thread-safe). Returns NULL when it is ready, else why it could not
/// be loaded (dlerror's text, or a missing symbol), naming the library.
const char *ccsd_systemd_load(void);

/// sd_notify(3); 0 without NOTIFY_SOCKET; -ELIBACC when the library is needed but cannot be loaded.
int ccsd_sd_notify(int unset_environment, const char *state);

/// sd_watchdog_enabled(3); 0 without WATCHDOG_USEC; -ELIBACC when the library is needed but cannot be loaded.
int ccsd_sd_watchdog_enabled(int unset_environment, uint64_t *usec);

/// sd_listen_fds(3); 0 without LISTEN_PID; -ELIBACC when the library is needed but cannot be loaded.
int ccsd_sd_listen_fds(int unset_environment);

#endif

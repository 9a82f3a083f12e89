// Loading a Debian shared library with dlopen(3) on first use, for the C targets that wrap one (CCurl,
// CMicroHTTPD, CSystemd): a daemon that never needs the library never maps it, nor what it pulls in.
#ifndef CCSD_DL_H
#define CCSD_DL_H

#include <stdbool.h>

/// One library being loaded, and the first error met: static storage in the wrapper that owns it.
struct ccsd_dl {
    void *library;
    const char *soname;
    /// NULL, or `text`: what failed, naming the library (and the missing symbol).
    const char *error;
    char text[512];
};

/// dlopen(soname, RTLD_NOW | RTLD_LOCAL). False, with `error` set to "<label> could not be loaded: <dlerror>",
/// when the library cannot be loaded.
bool ccsd_dl_open(struct ccsd_dl *dl, const char *soname, const char *label);

/// The address of symbol `name` in the opened library, or NULL (the first missing symbol sets `error` to
/// "<soname> has no <name>"). Call after a successful `ccsd_dl_open`.
void *ccsd_dl_find(struct ccsd_dl *dl, const char *name);

/// Sets `error` to `text` (formatted as printf) unless an error is already set.
void ccsd_dl_fail(struct ccsd_dl *dl, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif

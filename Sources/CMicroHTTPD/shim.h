#ifndef CCSD_CMICROHTTPD_SHIM_H
#define CCSD_CMICROHTTPD_SHIM_H
// GNU libmicrohttpd (Debian's libmicrohttpd-dev) for the HTTPServer module. Swift cannot call C variadic
// functions (MHD_start_daemon), so small non-variadic wrappers live here.
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

#endif

#ifndef CCSD_CCURL_SHIM_H
#define CCSD_CCURL_SHIM_H
// libcurl (Debian's libcurl4-openssl-dev): the HTTP client of the CLI (over the API's Unix socket) and of the
// webhook outlet. curl_easy_setopt is variadic, which Swift cannot call: typed wrappers live here.
#include <curl/curl.h>

#endif

#ifndef CCSD_CURL_H
#define CCSD_CURL_H
// libcurl (Debian's libcurl4), loaded with dlopen(3) the first time a handle is asked for: the HTTP client
// of the CLI (over the API's Unix socket) and of the webhook outlet. A daemon without a webhook never loads
// it, nor the twenty-odd libraries it pulls in (GnuTLS, Kerberos, LDAP, SSH…), about 4 MiB resident.
// <curl/curl.h> gives the types and constants only; nothing here links libcurl.
//
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: typed wrappers live here.
#include <curl/curl.h>

/// Loads libcurl.so.4 once per process (thread-safe) and runs curl_global_init(CURL_GLOBAL_DEFAULT).
/// Returns NULL when libcurl is ready, else why it could not be loaded (dlerror's text, or a missing symbol).
const char *ccsd_curl_load(void);

/// curl_easy_init, after `ccsd_curl_load`; NULL when libcurl could not be loaded (ask `ccsd_curl_load` why).
CURL *ccsd_curl_easy_init(void);
void ccsd_curl_easy_cleanup(CURL *handle);
void ccsd_curl_easy_reset(CURL *handle);
CURLcode ccsd_curl_easy_perform(CURL *handle);
const char *ccsd_curl_easy_strerror(CURLcode code);
struct curl_slist *ccsd_curl_slist_append(struct curl_slist *list, const char *string);
void ccsd_curl_slist_free_all(struct curl_slist *list);

CURLcode ccsd_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccsd_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccsd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ccsd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode ccsd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value);

typedef size_t (*ccsd_curl_write_callback)(char *data, size_t size, size_t count, void *context);
CURLcode ccsd_curl_setopt_write_function(CURL *handle, ccsd_curl_write_callback callback);
CURLcode ccsd_curl_setopt_header_function(CURL *handle, ccsd_curl_write_callback callback);

CURLcode ccsd_curl_response_code(CURL *handle, long *code);
CURLcode ccsd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);

#endif

#ifndef CCSD_CCURL_SHIM_H
#define CCSD_CCURL_SHIM_H
// libcurl (Debian's libcurl4-openssl-dev): the HTTP client of the CLI (over the API's Unix socket) and of the
// webhook outlet. curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: typed
// wrappers live here.
#include <curl/curl.h>

static inline CURLcode ccsd_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccsd_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccsd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccsd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ccsd_curl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode ccsd_curl_setopt_write_function(CURL *handle, ccsd_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ccsd_curl_setopt_header_function(CURL *handle, ccsd_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode ccsd_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

static inline CURLcode ccsd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccsd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

#endif

// libcurl through dlopen(3): see include/ccsd_curl.h.
#include "ccsd_curl.h"
#include "ccsd_dl.h"

#include <pthread.h>

static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct ccsd_dl dl;

static void load(void) {
    if (!ccsd_dl_open(&dl, "libcurl.so.4", "libcurl")) return;
    curl.global_init = ccsd_dl_find(&dl, "curl_global_init");
    curl.easy_init = ccsd_dl_find(&dl, "curl_easy_init");
    curl.easy_cleanup = ccsd_dl_find(&dl, "curl_easy_cleanup");
    curl.easy_reset = ccsd_dl_find(&dl, "curl_easy_reset");
    curl.easy_perform = ccsd_dl_find(&dl, "curl_easy_perform");
    curl.easy_strerror = ccsd_dl_find(&dl, "curl_easy_strerror");
    curl.easy_setopt = ccsd_dl_find(&dl, "curl_easy_setopt");
    curl.easy_getinfo = ccsd_dl_find(&dl, "curl_easy_getinfo");
    curl.slist_append = ccsd_dl_find(&dl, "curl_slist_append");
    curl.slist_free_all = ccsd_dl_find(&dl, "curl_slist_free_all");
    if (dl.error != NULL) return;
    // Not thread-safe itself: here it runs once, under pthread_once, before any handle exists.
    CURLcode code = curl.global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
        ccsd_dl_fail(&dl, "curl_global_init failed: %s", curl.easy_strerror(code));
    }
}

const char *ccsd_curl_load(void) {
    pthread_once(&once, load);
    return dl.error;
}

// Every handle comes from ccsd_curl_easy_init, which loads first: the other wrappers are only ever called
// with a handle (or a string list) made after a successful load.
CURL *ccsd_curl_easy_init(void) { return ccsd_curl_load() == NULL ? curl.easy_init() : NULL; }
void ccsd_curl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }
void ccsd_curl_easy_reset(CURL *handle) { curl.easy_reset(handle); }
CURLcode ccsd_curl_easy_perform(CURL *handle) { return curl.easy_perform(handle); }
const char *ccsd_curl_easy_strerror(CURLcode code) {
    return ccsd_curl_load() == NULL ? curl.easy_strerror(code) : "libcurl is not loaded";
}
struct curl_slist *ccsd_curl_slist_append(struct curl_slist *list, const char *string) {
    return ccsd_curl_load() == NULL ? curl.slist_append(list, string) : NULL;
}
void ccsd_curl_slist_free_all(struct curl_slist *list) {
    if (list != NULL) curl.slist_free_all(list);
}

CURLcode ccsd_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccsd_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccsd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccsd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccsd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccsd_curl_setopt_write_function(CURL *handle, ccsd_curl_write_callback callback) {
    return curl.easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
CURLcode ccsd_curl_setopt_header_function(CURL *handle, ccsd_curl_write_callback callback) {
    return curl.easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
CURLcode ccsd_curl_response_code(CURL *handle, long *code) {
    return curl.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}
CURLcode ccsd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl.easy_getinfo(handle, info, value);
}

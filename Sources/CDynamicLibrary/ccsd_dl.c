// See include/ccsd_dl.h.
#include "ccsd_dl.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

bool ccsd_dl_open(struct ccsd_dl *dl, const char *soname, const char *label) {
    dl->soname = soname;
    dl->library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (dl->library != NULL) return true;
    const char *reason = dlerror();
    ccsd_dl_fail(dl, "%s could not be loaded: %s", label, reason != NULL ? reason : "dlopen failed");
    return false;
}

void *ccsd_dl_find(struct ccsd_dl *dl, const char *name) {
    void *symbol = dlsym(dl->library, name);
    if (symbol == NULL) ccsd_dl_fail(dl, "%s has no %s", dl->soname, name);
    return symbol;
}

void ccsd_dl_fail(struct ccsd_dl *dl, const char *format, ...) {
    if (dl->error != NULL) return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(dl->text, sizeof dl->text, format, arguments);
    va_end(arguments);
    dl->error = dl->text;
}

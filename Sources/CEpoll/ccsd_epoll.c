#include "ccsd_epoll.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <unistd.h>

int ccsd_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int ccsd_epoll_ctl(int epoll, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = {.events = events, .data.u64 = token};
    return epoll_ctl(epoll, op, fd, &event);
}

int ccsd_epoll_wait(int epoll, uint32_t *events, uint64_t *tokens, int max, int timeout) {
    struct epoll_event ready[64];
    if (max > 64) max = 64;
    int count = epoll_wait(epoll, ready, max, timeout);
    for (int index = 0; index < count; index++) {
        events[index] = ready[index].events;
        tokens[index] = ready[index].data.u64;
    }
    return count;
}

int ccsd_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

void ccsd_eventfd_signal(int fd) {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
}

void ccsd_eventfd_drain(int fd) {
    uint64_t value;
    (void)!read(fd, &value, sizeof value);
}

void ccsd_name_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }

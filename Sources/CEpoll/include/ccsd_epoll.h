// epoll(7) and eventfd(2) for the event loop's own thread (EpollReactor in the TLS module): Glibc's Swift
// module does not map <sys/epoll.h> or <sys/eventfd.h>, and `struct epoll_event` is packed, so events are
// passed as plain arrays of masks and tokens.
#ifndef CCSD_EPOLL_H
#define CCSD_EPOLL_H

#include <stdint.h>

static const uint32_t ccsd_epoll_in = 0x001;     // EPOLLIN
static const uint32_t ccsd_epoll_out = 0x004;    // EPOLLOUT
static const uint32_t ccsd_epoll_err = 0x008;    // EPOLLERR
static const uint32_t ccsd_epoll_hup = 0x010;    // EPOLLHUP
static const uint32_t ccsd_epoll_rdhup = 0x2000; // EPOLLRDHUP

/// A new epoll instance (close-on-exec), or -1 (errno).
int ccsd_epoll_create(void);
/// Adds (`op` 1), changes (3) or removes (2) `fd` with `events` and `token`, as epoll_ctl; 0 or -1 (errno).
int ccsd_epoll_ctl(int epoll, int op, int fd, uint32_t events, uint64_t token);
/// Waits as epoll_wait for at most `max` (at most 64) events, milliseconds `timeout` (-1: no limit); writes
/// each event's mask and token. The count, or -1 (errno).
int ccsd_epoll_wait(int epoll, uint32_t *events, uint64_t *tokens, int max, int timeout);
/// A nonblocking close-on-exec eventfd, or -1 (errno).
int ccsd_eventfd(void);
/// Adds 1 to the eventfd's counter.
void ccsd_eventfd_signal(int fd);
/// Resets the eventfd's counter.
void ccsd_eventfd_drain(int fd);
/// Names the calling thread (at most 15 bytes are kept), as shown by ps and perf.
void ccsd_name_thread(const char *name);

#endif

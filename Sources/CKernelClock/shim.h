#ifndef CHORUS_CKERNELCLOCK_SHIM_H
#define CHORUS_CKERNELCLOCK_SHIM_H

#include <errno.h>
/* time.h first: linux/errqueue.h uses struct timespec without including it. */
#include <time.h>
#include <linux/errqueue.h>
#include <linux/futex.h>
#include <linux/net_tstamp.h>
#include <linux/prctl.h>
#include <string.h>
#include <sys/socket.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Reads a clock with the clock_gettime system call itself rather than the C library's
   function, so that a tool which moves a process's time by interposing on the C library
   (libfaketime) does not move this read: it is the kernel's own time, the time in which
   the kernel stamps received datagrams and sound-card positions. Variadic syscall() cannot
   be called from Swift. Returns 0 on success, -1 with errno set on failure. */
static inline int chorus_kernel_clock_gettime(clockid_t clock, struct timespec *spec) {
    return (int)syscall(SYS_clock_gettime, clock, spec);
}

/* A one-word wake-up flag that a thread can wait on for a relative time, made of the futex
   system call itself. Waits in the C library and in Dispatch take absolute deadlines on a
   clock read through the C library; once an interposer has moved that clock, the kernel sees
   a deadline seconds away from the one meant, and the wait either returns at once (a thread
   then spins) or sleeps for seconds. A futex wait's timeout is relative and measured by the
   kernel, so it means the same to both. */

/* Takes a pending signal: returns 1 if the flag was set, clearing it, else 0. */
static inline int chorus_wake_flag_take(uint32_t *flag) {
    return __atomic_exchange_n(flag, 0, __ATOMIC_ACQ_REL) != 0;
}

/* Waits until the flag is set or `timeout_ns` has passed (forever if negative), then takes
   it. Returns 1 if it took a signal, 0 on timeout. May return 0 early (an interrupted wait);
   callers re-check what they wait for. */
static inline int chorus_wake_flag_wait(uint32_t *flag, int64_t timeout_ns) {
    if (chorus_wake_flag_take(flag)) return 1;
    struct timespec relative = { (time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000) };
    /* Sleeps only while the flag is still 0, so a signal between the take and here is not
       lost: the kernel compares the word before it sleeps. */
    syscall(SYS_futex, flag, FUTEX_WAIT_PRIVATE, 0, timeout_ns < 0 ? NULL : &relative, NULL, 0);
    return chorus_wake_flag_take(flag);
}

/* Sets the flag and wakes its waiter. One system call and no lock: safe on a real-time
   thread. */
static inline void chorus_wake_flag_signal(uint32_t *flag) {
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, flag, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sets the calling thread's timer slack: how late the kernel may end its timed sleeps so as
   to batch wake-ups (50 us by default for an ordinary thread). Variadic prctl() cannot be
   called from Swift. Returns 0 on success, -1 with errno set on failure. */
static inline int chorus_set_timer_slack(uint64_t nanoseconds) {
    return (int)syscall(SYS_prctl, PR_SET_TIMERSLACK, (unsigned long)nanoseconds, 0UL, 0UL, 0UL);
}

/* The calling thread's timer slack in nanoseconds, or -1 with errno set on failure. */
static inline int64_t chorus_get_timer_slack(void) {
    return (int64_t)syscall(SYS_prctl, PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
}

/* Transmit stamps. A datagram sent after a sleep leaves through cold code: the time between
   reading the clock and the datagram reaching the network can be several µs more than for
   one sent straight after receiving, and a two-way clock exchange reads that asymmetry as
   offset. The kernel can stamp a datagram as its driver takes it (a software transmit
   stamp) and queue the stamp on the socket's error queue. */

/* Has the socket report software stamps, stamps only (not the datagram back), so that
   datagrams sent with chorus_send_stamped queue their transmit stamps. Returns 0 or -1. */
static inline int chorus_enable_transmit_stamps(int fd) {
    unsigned int flags = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags);
}

/* Sends one datagram asking for a software transmit stamp of it alone (per-datagram control
   message: other datagrams on the socket are not stamped). Returns sendmsg's result. */
static inline ssize_t chorus_send_stamped(int fd, const void *bytes, size_t length,
                                          const struct sockaddr *address, socklen_t address_length) {
    union { char buffer[CMSG_SPACE(sizeof(unsigned int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct iovec vector = { (void *)bytes, length };
    struct msghdr header;
    memset(&header, 0, sizeof header);
    header.msg_name = (void *)address;
    header.msg_namelen = address_length;
    header.msg_iov = &vector;
    header.msg_iovlen = 1;
    header.msg_control = control.buffer;
    header.msg_controllen = sizeof control.buffer;
    struct cmsghdr *message = CMSG_FIRSTHDR(&header);
    message->cmsg_level = SOL_SOCKET;
    message->cmsg_type = SO_TIMESTAMPING;
    message->cmsg_len = CMSG_LEN(sizeof(unsigned int));
    unsigned int flags = SOF_TIMESTAMPING_TX_SOFTWARE;
    memcpy(CMSG_DATA(message), &flags, sizeof flags);
    return sendmsg(fd, &header, MSG_NOSIGNAL);
}

/* Takes the oldest entry from the socket's error queue without waiting. Returns 1 and sets
   *realtime_ns (CLOCK_REALTIME) when it was a software transmit stamp, 2 for any other
   entry, 0 when the queue is empty, -1 on another error (errno set). */
static inline int chorus_take_transmit_stamp(int fd, int64_t *realtime_ns) {
    char data[64];
    union { char buffer[512]; struct cmsghdr align; } control;
    struct iovec vector = { data, sizeof data };
    struct msghdr header;
    memset(&header, 0, sizeof header);
    header.msg_iov = &vector;
    header.msg_iovlen = 1;
    header.msg_control = control.buffer;
    header.msg_controllen = sizeof control.buffer;
    ssize_t got = recvmsg(fd, &header, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (got < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    int stamped = 0, transmitted = 0;
    int64_t stamp = 0;
    for (struct cmsghdr *message = CMSG_FIRSTHDR(&header); message; message = CMSG_NXTHDR(&header, message)) {
        if (message->cmsg_level == SOL_SOCKET && message->cmsg_type == SO_TIMESTAMPING
            && message->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec software;
            memcpy(&software, CMSG_DATA(message), sizeof software);
            if (software.tv_sec != 0 || software.tv_nsec != 0) {
                stamp = (int64_t)software.tv_sec * 1000000000 + software.tv_nsec;
                stamped = 1;
            }
        } else if (message->cmsg_len >= CMSG_LEN(sizeof(struct sock_extended_err))) {
            struct sock_extended_err error;
            memcpy(&error, CMSG_DATA(message), sizeof error);
            if (error.ee_origin == SO_EE_ORIGIN_TIMESTAMPING && error.ee_info == SCM_TSTAMP_SND) transmitted = 1;
        }
    }
    if (stamped && transmitted) {
        *realtime_ns = stamp;
        return 1;
    }
    return 2;
}

#endif

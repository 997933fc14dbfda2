#ifndef CHORUS_CKERNELCLOCK_SHIM_H
#define CHORUS_CKERNELCLOCK_SHIM_H

#include <linux/futex.h>
#include <linux/prctl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
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

#endif

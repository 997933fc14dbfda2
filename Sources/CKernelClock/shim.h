#ifndef CHORUS_CKERNELCLOCK_SHIM_H
#define CHORUS_CKERNELCLOCK_SHIM_H

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

#endif

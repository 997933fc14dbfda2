#ifndef CHORUS_CTHREADSANITIZER_SHIM_H
#define CHORUS_CTHREADSANITIZER_SHIM_H

/* ThreadSanitizer's annotations for a lock it cannot see. They exist only in a process built
   with -sanitize=thread; declared weak, they are null everywhere else and the shims do
   nothing but test a pointer. */
void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

/* The calling thread now holds the lock at `address`: it sees everything written before
   the last release of that address. */
static inline void chorus_tsan_acquire(const void *address) {
    if (__tsan_acquire) __tsan_acquire((void *)address);
}

/* The calling thread is about to let go of the lock at `address`. */
static inline void chorus_tsan_release(const void *address) {
    if (__tsan_release) __tsan_release((void *)address);
}

/* Whether this process runs under the sanitizer (its runtime defines the annotations). */
static inline int chorus_tsan_active(void) {
    return __tsan_acquire != 0;
}

#endif

#define _GNU_SOURCE
#include <stddef.h>
#include <errno.h>
#include "allocation_counter.h"

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define CHORUS_UNDER_SANITIZER 1
#  endif
#endif

// Thread-local, in the executable itself: initial-exec storage, which the allocator can
// read without allocating.
static __thread int counting;
static __thread long allocations;

void chorus_allocation_counting_start(void) { allocations = 0; counting = 1; }
long chorus_allocation_counting_stop(void) { counting = 0; return allocations; }

#ifdef CHORUS_UNDER_SANITIZER

int chorus_allocation_counting_available(void) { return 0; }

#else

int chorus_allocation_counting_available(void) { return 1; }

// glibc's own entry points, which these hand every call on to.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static inline void count(void) { if (counting) allocations += 1; }

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t count_, size_t size) { count(); return __libc_calloc(count_, size); }
void *realloc(void *pointer, size_t size) { count(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

#endif

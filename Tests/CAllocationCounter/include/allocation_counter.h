#ifndef CHORUS_ALLOCATION_COUNTER_H
#define CHORUS_ALLOCATION_COUNTER_H

/// Counts the heap allocations the calling thread makes between start and stop, by
/// standing in for the C library's allocator in the test process (every allocation is then
/// handed on to the C library's own). Under a sanitizer, which has an allocator of its own,
/// nothing is counted and `chorus_allocation_counting_available` says so.
int chorus_allocation_counting_available(void);
void chorus_allocation_counting_start(void);
/// Stops counting on this thread and returns the allocations made since the start.
long chorus_allocation_counting_stop(void);

#endif

// TuneAllocator: glibc malloc settings for a process that recovers logs.
//
// A recovery scan keeps a growing vector per segment (the retained batches
// and control batches of segment_recovery_scan.h, a few MiB per 128 MiB
// segment of transactional data) and frees it when the segment is applied;
// the next segment's scan builds the same again. With glibc's defaults a
// block that large is mmap()ed and returned to the kernel when freed, so
// every segment faults its pages in afresh (one minor fault per 4 KiB, each
// a hypervisor exit on a VM), and the heap's top is trimmed as soon as 128
// KiB lie free. TuneAllocator serves blocks below 32 MiB from the heap and
// keeps up to 64 MiB free at its top, so later segments reuse pages already
// mapped. `daruma recover` of 1 GiB partitions end to end, one thread, nine
// runs each against a build without it, interleaved, on a quiet 2-vCPU VM
// (bench/results/allocator_tuning-e2e-20261204.json): transactional with
// aborts 588 -> 515 ms (9,746 -> 5,185 minor faults), one idempotent
// producer 236 -> 218 ms, 10,000 producers 1.85 -> 1.75 s; peak RSS the same.
// The cost is memory a long-running broker keeps after a peak: at most the
// trim threshold at the heap's top (blocks of 32 MiB and more are still
// mmap()ed and returned at once).
//
// Call it once, first thing in main(), before threads start; a no-op on a
// C library other than glibc and under ASan (whose allocator is not glibc's).
//
// ReserveHugePages(bytes): the calling thread's next `bytes` of small
// allocations come from memory advised for transparent huge pages. A start
// that loads many partitions keeps ~14 KiB of small objects per partition
// (segments, indexes, paths: 135 MiB for 10,000 partitions), and each 4 KiB
// page of it is a minor fault when first written: ~10 us on this kind of VM,
// where a 2 MiB huge page costs about as much as one 4 KiB fault. glibc grows
// a thread's heap one page at a time (one mprotect each) and advises none of
// it (its glibc.malloc.hugetlb tunable advises the main arena's heap and
// blocks of 2 MiB and more, not a thread heap's growth, and only when set in
// the environment before the process starts). So the loading thread takes
// one block of `bytes` from its arena, advises it with MADV_HUGEPAGE and
// frees all but its first 64 bytes at once: the rest falls back into the
// arena's top (TuneAllocator's thresholds keep a block below 32 MiB in the
// heap and do not trim below 64 MiB free), and the allocations after it are
// carved from there. The 64 bytes stay allocated until the thread's next
// reserve, so that the heap the block lies in never becomes empty (glibc
// unmaps an empty thread heap at once). Nothing is written, so the memory is
// only reserved address space until used; with the kernel's THP setting at
// "never", or before TuneAllocator, or under ASan, it does nothing.
#pragma once

#include <cstddef>

namespace daruma {

void TuneAllocator();

void ReserveHugePages(size_t bytes);

}  // namespace daruma

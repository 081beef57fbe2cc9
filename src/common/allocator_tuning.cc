#include "common/allocator_tuning.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace daruma {

void TuneAllocator() {
#if defined(__GLIBC__)
  // Setting either value turns off glibc's own adjustment of both, which
  // would only raise the mmap threshold after a block of that size was freed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

}  // namespace daruma

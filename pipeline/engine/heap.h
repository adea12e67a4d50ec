// The analysis's heap: blocks up to 32 MiB (a rank's tables) stay in the heap when freed,
// so that the next replay of a step reuses them instead of fresh pages (the kernel's
// zeroing was a fifth of a 10^8-event analysis); freed pages go back to the kernel where
// what is freed would otherwise sit beside what lives on (between steps, and before a
// replay whose results outlive its step).
#pragma once

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace perfsift::pipeline {

// Once, before the analysis allocates.
inline void keep_freed_blocks() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, -1);  // never on free: hand_back_freed_pages does it
#endif
}

// The heap's free pages back to the kernel (what is in use stays).
inline void hand_back_freed_pages() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace perfsift::pipeline

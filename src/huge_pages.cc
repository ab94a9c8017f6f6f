// Huge-page mappings (see huge_pages.h).
#include "clickatron/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace clickatron {

size_t HugePageRound(size_t bytes) {
  if (bytes > SIZE_MAX - (kHugePageBytes - 1)) return 0;  // no such mapping: MapHugePages refuses it
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

void* MapHugePages(size_t bytes) {
  const size_t size = HugePageRound(bytes);
  if (size == 0 || size > SIZE_MAX - kHugePageBytes) return nullptr;
  // mmap aligns to 4 KiB only: map a huge page more, then cut the unaligned
  // head and the tail so that the range starts on a 2 MiB boundary.
  const size_t over = size + kHugePageBytes;
  void* mapped = ::mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (begin + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > begin) ::munmap(mapped, aligned - begin);
  const uintptr_t tail = aligned + size;
  if (begin + over > tail) ::munmap(reinterpret_cast<void*>(tail), begin + over - tail);
  // Hints: without THP (or refused) the range keeps 4 KiB pages; a kernel
  // before 5.14 does not populate ahead. Populated in one call, not by a
  // fault per page: callers fill their mappings (the counter index's array
  // reserved for a whole next table fills over that table's life, and is
  // made resident up front all the same), and a fault is dear
  // (a throwaway program, timed by hand: filling 32 MiB at random took 113
  // ms of CPU on 4 KiB pages faulted one by one, 27 ms populated; 15 and 9
  // ms on huge pages).
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_POPULATE_WRITE);
  return reinterpret_cast<void*>(aligned);
}

void UnmapHugePages(void* at, size_t bytes) {
  if (at != nullptr) ::munmap(at, HugePageRound(bytes));
}

}  // namespace clickatron

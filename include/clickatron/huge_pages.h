// Anonymous memory for large arrays written at random places (a realtime
// shard's in-memory table: its chunks, hash slots and checkpoint sort
// arrays), on mappings of their own marked for transparent huge pages
// (madvise MADV_HUGEPAGE).
//
// Why: under keys never seen before, a realtime shard spent about a quarter
// of its CPU on first touches of such arrays (perf: 4 KiB page faults, which
// are dear in a VM, and the memset that cleared a hash table's new slots).
// Filling a 32 MiB slot array at random took 117-153 ms of CPU with malloc
// and memset, 8-13 ms on a huge-page mapping (a throwaway program, timed by
// hand on the 2-core machine). Where the kernel has THP off, the mapping is
// made all the same with 4 KiB pages: slower, never wrong.
//
// Mappings are rounded up to 2 MiB and 2 MiB-aligned, so every page can be a
// huge one, and are populated when made (MADV_POPULATE_WRITE): resident at
// once, which suits arrays that are filled anyway (a counter index reserved
// for a whole next table is resident from the start, before it fills). The kernel hands them out
// zero-filled: callers need not clear them. Thread-safety: the functions
// are; a mapping is its owner's.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <new>

namespace clickatron {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` rounded up to a whole number of huge pages (0 past the largest).
size_t HugePageRound(size_t bytes);
// A zero-filled mapping of HugePageRound(bytes); nullptr when the kernel
// refuses it (out of address space or over a memory limit).
void* MapHugePages(size_t bytes);
// Unmaps what MapHugePages(bytes) returned (the same `bytes`).
void UnmapHugePages(void* at, size_t bytes);

// A std allocator that maps arrays of kHugePageBytes and more with
// MapHugePages, and leaves smaller ones to operator new. Throws bad_alloc as
// std::allocator does.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    void* at = MapHugePages(bytes);
    if (at == nullptr) throw std::bad_alloc();
    return static_cast<T*>(at);
  }
  void deallocate(T* at, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().deallocate(at, n);
    UnmapHugePages(at, bytes);
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

}  // namespace clickatron

#include "table_arena.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <new>

namespace clickatron::realtime {

TableArena::~TableArena() {
  for (const Mapping& m : chunks_) UnmapHugePages(m.at, m.bytes);
}

char* TableArena::Map(size_t bytes) {
  void* at = MapHugePages(bytes);
  if (at == nullptr) throw std::bad_alloc();
  chunks_.push_back(Mapping{at, bytes});
  bytes_ += HugePageRound(bytes);
  return static_cast<char*>(at);
}

void* TableArena::AllocateBlock(size_t bytes) { return Map(bytes); }

void TableArena::FreeBlock(void* at, size_t bytes) {
  auto it = std::find_if(chunks_.begin(), chunks_.end(), [&](const Mapping& m) { return m.at == at; });
  assert(it != chunks_.end() && "FreeBlock of a block this arena did not give");
  if (it == chunks_.end()) return;
  chunks_.erase(it);
  UnmapHugePages(at, bytes);
  bytes_ -= HugePageRound(bytes);
}

void* TableArena::do_allocate(size_t bytes, size_t alignment) {
  if (bytes > SIZE_MAX - alignment - kChunkBytes) throw std::bad_alloc();
  auto aligned = [&](uintptr_t at) { return (at + alignment - 1) & ~(uintptr_t{alignment} - 1); };
  if (next_ != nullptr) {
    const uintptr_t at = aligned(reinterpret_cast<uintptr_t>(next_));
    const uintptr_t end = reinterpret_cast<uintptr_t>(end_);
    if (at <= end && end - at >= bytes) {
      next_ = reinterpret_cast<char*>(at + bytes);
      return reinterpret_cast<char*>(at);
    }
  }
  // A new mapping: a chunk, or for a request larger than a chunk one of its
  // own size (rounded up to huge pages). Mappings start on a 2 MiB boundary,
  // so only a larger alignment needs room to align in. Whichever of the new
  // mapping and the current chunk has more room left serves the requests
  // that follow; the other's tail stays unused (and counted).
  const size_t pad = alignment > kHugePageBytes ? alignment : 0;
  const size_t size = HugePageRound(std::max(bytes + pad, kChunkBytes));
  char* chunk = Map(size);
  char* at = reinterpret_cast<char*>(aligned(reinterpret_cast<uintptr_t>(chunk)));
  if (static_cast<size_t>(chunk + size - (at + bytes)) > static_cast<size_t>(end_ - next_)) {
    next_ = at + bytes;
    end_ = chunk + size;
  }
  return at;
}

}  // namespace clickatron::realtime

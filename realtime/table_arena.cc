#include "table_arena.h"

#include <algorithm>
#include <cstdint>
#include <new>

namespace clickatron::realtime {

TableArena::~TableArena() {
  for (const Mapping& m : chunks_) UnmapHugePages(m.at, m.bytes);
}

void* TableArena::AllocateBlock(size_t bytes) {
  void* at = MapHugePages(bytes);
  if (at == nullptr) throw std::bad_alloc();
  chunks_.push_back(Mapping{at, bytes});
  bytes_ += HugePageRound(bytes);
  return at;
}

void TableArena::FreeBlock(void* at, size_t bytes) {
  auto it = std::find_if(chunks_.begin(), chunks_.end(), [&](const Mapping& m) { return m.at == at; });
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
  // A new chunk (aligned to 2 MiB); a request larger than a chunk gets a
  // mapping of its own size, and the current chunk keeps serving the small
  // ones.
  const size_t size = HugePageRound(std::max(bytes + alignment, kChunkBytes));
  char* chunk = static_cast<char*>(MapHugePages(size));
  if (chunk == nullptr) throw std::bad_alloc();
  chunks_.push_back(Mapping{chunk, size});
  bytes_ += size;
  char* at = reinterpret_cast<char*>(aligned(reinterpret_cast<uintptr_t>(chunk)));
  if (size != kChunkBytes) return at;
  next_ = at + bytes;
  end_ = chunk + size;
  return at;
}

}  // namespace clickatron::realtime

#include "table_arena.h"

#include <cstdint>
#include <new>

namespace clickatron::realtime {

TableArena::~TableArena() {
  for (void* chunk : chunks_) ::operator delete(chunk);
}

void* TableArena::do_allocate(size_t bytes, size_t alignment) {
  if (bytes > SIZE_MAX - alignment) throw std::bad_alloc();
  auto aligned = [&](uintptr_t at) { return (at + alignment - 1) & ~(uintptr_t{alignment} - 1); };
  if (next_ != nullptr) {
    const uintptr_t at = aligned(reinterpret_cast<uintptr_t>(next_));
    const uintptr_t end = reinterpret_cast<uintptr_t>(end_);
    if (at <= end && end - at >= bytes) {
      next_ = reinterpret_cast<char*>(at + bytes);
      return reinterpret_cast<char*>(at);
    }
  }
  // A new chunk (operator new aligns to max_align_t); a request larger than
  // a chunk (a counter index's slot array) gets one of its own size, and the
  // current chunk keeps serving the small ones.
  const size_t size = bytes + alignment > kChunkBytes ? bytes + alignment : kChunkBytes;
  char* chunk = static_cast<char*>(::operator new(size));
  chunks_.push_back(chunk);
  bytes_ += size;
  char* at = reinterpret_cast<char*>(aligned(reinterpret_cast<uintptr_t>(chunk)));
  if (size != kChunkBytes) return at;
  next_ = at + bytes;
  end_ = chunk + size;
  return at;
}

}  // namespace clickatron::realtime

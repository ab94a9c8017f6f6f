#include "counter_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "clickatron/text_hash.h"

namespace clickatron::realtime {
namespace counter_index {

constexpr size_t kMinCapacity = 16;

// Entries fill at most 3/4 of the slots.
size_t CapacityFor(size_t entries) {
  return std::bit_ceil(std::max(kMinCapacity, entries + entries / 3 + 1));
}

}  // namespace counter_index

CounterIndex::~CounterIndex() {
  for (size_t i = 0; i < capacity_; ++i) {
    if (slots_[i].entry != nullptr) slots_[i].entry->~CounterEntry();
  }
}

uint64_t CounterIndex::Hash(std::string_view key) { return HashText(key); }

void CounterIndex::Prefetch(uint64_t hash) const {
  if (capacity_ > 0) __builtin_prefetch(&slots_[Home(hash)]);
}

void CounterIndex::PrefetchEntry(uint64_t hash) const {
  if (capacity_ == 0) return;
  const Slot& slot = slots_[Home(hash)];
  if (slot.entry != nullptr) __builtin_prefetch(slot.entry);
}

CounterEntry* CounterIndex::Find(std::string_view key, uint64_t hash) const {
  if (capacity_ == 0) return nullptr;
  for (size_t i = Home(hash);; i = (i + 1) & (capacity_ - 1)) {
    const Slot& slot = slots_[i];
    if (slot.entry == nullptr) return nullptr;
    if (slot.hash == hash && slot.entry->key == key) return slot.entry;
  }
}

CounterEntry* CounterIndex::FindOrMake(std::string_view key, uint64_t hash, bool* made) {
  if ((size_ + 1) * 4 > capacity_ * 3) Grow(size_ + 1);
  size_t i = Home(hash);
  for (;; i = (i + 1) & (capacity_ - 1)) {
    Slot& slot = slots_[i];
    if (slot.entry == nullptr) break;
    if (slot.hash == hash && slot.entry->key == key) {
      *made = false;
      return slot.entry;
    }
  }
  // One allocation: the entry, then its key's bytes.
  void* memory = arena_->allocate(sizeof(CounterEntry) + key.size(), alignof(CounterEntry));
  char* key_bytes = static_cast<char*>(memory) + sizeof(CounterEntry);
  std::memcpy(key_bytes, key.data(), key.size());
  auto* entry = new (memory) CounterEntry{std::string_view(key_bytes, key.size()), 0, nullptr};
  slots_[i] = Slot{hash, entry};
  ++size_;
  *made = true;
  return entry;
}

void CounterIndex::Reserve(size_t entries) {
  if (entries * 4 > capacity_ * 3) Grow(entries);
}

bool CounterIndex::InBlock(size_t capacity) { return capacity * sizeof(Slot) >= kHugePageBytes; }

void CounterIndex::Grow(size_t entries) {
  const size_t capacity = std::max(counter_index::CapacityFor(entries), capacity_ * 2);
  Slot* slots = nullptr;
  if (InBlock(capacity)) {
    slots = static_cast<Slot*>(arena_->AllocateBlock(capacity * sizeof(Slot)));  // zero-filled
  } else {
    slots = static_cast<Slot*>(arena_->allocate(capacity * sizeof(Slot), alignof(Slot)));
    std::memset(static_cast<void*>(slots), 0, capacity * sizeof(Slot));
  }
  for (size_t i = 0; i < capacity_; ++i) {
    if (slots_[i].entry == nullptr) continue;
    size_t j = slots_[i].hash & (capacity - 1);
    while (slots[j].entry != nullptr) j = (j + 1) & (capacity - 1);
    slots[j] = slots_[i];
  }
  // An outgrown block goes now; a smaller array stays in the arena (it
  // frees nothing before the table goes). Only the loop thread grows an
  // index, and only an active table's, which nothing else reads.
  if (slots_ != nullptr && InBlock(capacity_)) arena_->FreeBlock(slots_, capacity_ * sizeof(Slot));
  slots_ = slots;
  capacity_ = capacity;
}

}  // namespace clickatron::realtime

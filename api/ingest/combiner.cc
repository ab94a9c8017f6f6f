#include "ingest/combiner.h"

#include <algorithm>
#include <charconv>

#include "clickatron/record.h"
#include "clickatron/text_hash.h"

namespace clickatron::api {

void Combiner::Add(RoutedRecord&& record) {
  Window& w = shards_[record.shard];
  ++w.records;
  if (record.lookup) {
    // Same HASH, same value (a hash is a function of the value): keep one.
    auto [it, inserted] = w.lookups.try_emplace(std::move(record.key), std::move(record.lookup_value));
    if (inserted) w.bytes += it->first.size() + it->second.size() + 4;
    return;
  }
  const size_t before = w.counters.size();
  const uint64_t hash = HashText(record.key);
  Window::Counter& counter = w.CounterFor(std::move(record.key), hash);
  // Deltas are at most kMaxIncrementValue each: no window can overflow int64.
  counter.delta += record.delta;
  if (w.counters.size() != before) w.bytes += counter.key.size() + 22;
  if (record.has_visitor) {
    if (!counter.visitors) {
      counter.visitors = std::make_unique<UniqueSketch>();
      ++w.sketches;
      w.bytes += counter.key.size() + 4;
    }
    counter.visitors->Add(record.visitor);
    w.bytes += 12;  // ~12 text bytes a visitor while explicit (the usual case inside a window)
  }
}

Combiner::Window::Counter& Combiner::Window::CounterFor(std::string&& key, uint64_t hash) {
  if ((counters.size() + 1) * 2 > slots.size()) Grow();
  const size_t mask = slots.size() - 1;
  const auto tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& slot = slots[i];
    if (slot.index_plus_one == 0) {
      Counter& made = counters.emplace_back();  // first: a throw here leaves no slot pointing past the end
      made.key = std::move(key);
      made.hash = hash;
      slot = Slot{static_cast<uint32_t>(counters.size()), tag};
      return made;
    }
    if (slot.tag != tag) continue;
    Counter& c = counters[slot.index_plus_one - 1];
    if (c.hash == hash && c.key == key) return c;
  }
}

void Combiner::Window::Grow() {
  slots.assign(std::max<size_t>(64, slots.size() * 2), Slot{});
  const size_t mask = slots.size() - 1;
  for (size_t n = 0; n < counters.size(); ++n) {
    size_t i = counters[n].hash & mask;
    while (slots[i].index_plus_one != 0) i = (i + 1) & mask;
    slots[i] = Slot{static_cast<uint32_t>(n + 1), static_cast<uint32_t>(counters[n].hash >> 32)};
  }
}

bool Combiner::empty() const {
  for (const Window& w : shards_) {
    if (!w.counters.empty() || !w.lookups.empty()) return false;
  }
  return true;
}

Combiner::Lines Combiner::Take(uint32_t shard) {
  Window& w = shards_[shard];
  Lines out;
  out.records = w.records;
  out.count = w.counters.size() + w.lookups.size() + w.sketches;
  out.text.reserve(w.bytes);
  char digits[24];
  for (const Window::Counter& counter : w.counters) {
    const std::string& key = counter.key;
    out.text.append(key);
    out.text.push_back(',');
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), counter.delta);
    (void)ec;
    out.text.append(digits, end);
    out.text.push_back('\n');
    if (counter.visitors) {  // the unique record beside its counter
      out.text.push_back(kUniqueMark);
      out.text.append(key);
      out.text.push_back(',');
      counter.visitors->AppendText(&out.text);
      out.text.push_back('\n');
    }
  }
  for (const auto& [hash, value] : w.lookups) {
    out.text.append("l|").append(hash).push_back(',');
    out.text.append(value).push_back('\n');
  }
  // The next window reuses both arrays. Its slots are emptied where this
  // window's counters sit (found again by index), so the cost follows the
  // window, not the table. After a burst left them far larger than this
  // window needed, both arrays are given back and start again small.
  if (w.slots.size() > 65536 && w.counters.size() * 8 < w.slots.size()) {
    std::vector<Window::Slot>().swap(w.slots);
    std::vector<Window::Counter>().swap(w.counters);
  } else {
    const size_t mask = w.slots.size() - 1;
    for (size_t n = 0; n < w.counters.size(); ++n) {
      size_t i = w.counters[n].hash & mask;
      while (w.slots[i].index_plus_one != n + 1) i = (i + 1) & mask;
      w.slots[i] = Window::Slot{};
    }
  }
  w.counters.clear();
  w.lookups.clear();
  w.sketches = 0;
  w.records = 0;
  w.bytes = 0;
  return out;
}

}  // namespace clickatron::api

#include "ingest/combiner.h"

#include <charconv>

#include "clickatron/record.h"

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
  auto [it, inserted] = w.counters.try_emplace(std::move(record.key));
  Window::Counter& counter = it->second;
  // Deltas are at most kMaxIncrementValue each: no window can overflow int64.
  counter.delta += record.delta;
  if (inserted) w.bytes += it->first.size() + 22;
  if (record.has_visitor) {
    if (!counter.visitors) {
      counter.visitors = std::make_unique<UniqueSketch>();
      ++w.sketches;
      w.bytes += it->first.size() + 4;
    }
    counter.visitors->Add(record.visitor);
    w.bytes += 12;  // ~12 text bytes a visitor while explicit (the usual case inside a window)
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
  for (const auto& [key, counter] : w.counters) {
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
  // clear() keeps the bucket arrays: the next window reuses them.
  w.counters.clear();
  w.lookups.clear();
  w.sketches = 0;
  w.records = 0;
  w.bytes = 0;
  return out;
}

}  // namespace clickatron::api

#include "idempotency_table.h"

namespace clickatron::api {

bool ValidIdempotencyKey(std::string_view key) {
  if (key.empty() || key.size() > 255) return false;
  for (const char c : key) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

IdempotencyTable::Lookup IdempotencyTable::Begin(std::string_view key, std::string_view digest, int64_t now) {
  Expire(now);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    Entry e;
    e.digest = std::string(digest);
    bytes_ += EntryBytes(key, e);
    entries_.emplace(std::string(key), std::move(e));
    ++in_flight_;
    return {Verdict::kNew, 0};
  }
  const Entry& e = it->second;
  if (e.digest != digest) {
    ++counters_.reused;
    return {Verdict::kReused, 0};
  }
  if (e.in_flight) {
    ++counters_.in_flight_refusals;
    return {Verdict::kInFlight, 0};
  }
  ++counters_.replays;
  return {Verdict::kReplay, e.increments};
}

void IdempotencyTable::Complete(std::string_view key, uint64_t increments, int64_t now) {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.in_flight) return;
  it->second.in_flight = false;
  it->second.increments = increments;
  --in_flight_;
  done_order_.emplace_back(now, it->first);
  Expire(now);
}

void IdempotencyTable::Abort(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.in_flight) return;
  --in_flight_;
  bytes_ -= EntryBytes(it->first, it->second);
  entries_.erase(it);
}

void IdempotencyTable::Restore(std::string_view key, std::string_view digest, uint64_t increments, int64_t unix,
                               int64_t now) {
  if (unix + options_.window_seconds <= now) return;
  auto [it, inserted] = entries_.try_emplace(std::string(key));
  if (!inserted) return;  // a key is committed once; keep the first
  it->second.digest = std::string(digest);
  it->second.increments = increments;
  it->second.in_flight = false;
  bytes_ += EntryBytes(key, it->second);
  done_order_.emplace_back(unix, it->first);
  ++counters_.restored;
  Expire(now);
}

void IdempotencyTable::Forget(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.in_flight) return;
  bytes_ -= EntryBytes(it->first, it->second);
  entries_.erase(it);
}

void IdempotencyTable::Expire(int64_t now) {
  while (!done_order_.empty() && done_order_.front().first + options_.window_seconds <= now) {
    Forget(done_order_.front().second);
    done_order_.pop_front();
    ++counters_.expired;
  }
  while (done_order_.size() > options_.max_keys) {
    Forget(done_order_.front().second);
    done_order_.pop_front();
    ++counters_.evicted;
  }
}

}  // namespace clickatron::api

// The persisted newest archive generation; see known_generation.h.
#include "query/fetch/known_generation.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "clickatron/file_util.h"

namespace clickatron::api {

KnownGeneration::KnownGeneration(std::string path) : path_(std::move(path)) {
  if (path_.empty() || !FileExists(path_)) return;
  auto text = ReadFileToString(path_);
  if (!text.ok()) {
    spdlog::warn("cannot read {}: {} (going on without the last known archive generation)", path_,
                 text.status().ToString());
    return;
  }
  std::string_view digits = *text;
  while (!digits.empty() && (digits.back() == '\n' || digits.back() == '\r' || digits.back() == ' ')) {
    digits.remove_suffix(1);
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    spdlog::warn("{} does not hold a generation number (going on without it)", path_);
    return;
  }
  newest_.store(value);
  persisted_.store(value);
}

void KnownGeneration::Saw(uint64_t generation) {
  uint64_t newest = newest_.load(std::memory_order_acquire);
  while (generation > newest && !newest_.compare_exchange_weak(newest, generation, std::memory_order_acq_rel)) {
  }
  if (path_.empty() || persisted_.load(std::memory_order_acquire) >= newest_.load(std::memory_order_acquire)) return;
  // Another loop writing the file now writes what it saw; a newer one is
  // written at this loop's next answer. No loop waits for another's fsync.
  std::unique_lock lock(write_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const uint64_t want = newest_.load(std::memory_order_acquire);
  if (persisted_.load(std::memory_order_relaxed) >= want) return;  // another loop wrote it meanwhile
  if (Status st = WriteFileAtomically(path_, std::to_string(want) + "\n"); !st.ok()) {
    spdlog::warn("cannot record archive generation {} in {}: {}", want, path_, st.ToString());
    return;
  }
  persisted_.store(want, std::memory_order_release);
}

namespace {

// Raises `value` to `to` (never lowers it).
template <typename T>
void RaiseTo(std::atomic<T>& value, T to) {
  T now = value.load(std::memory_order_relaxed);
  while (now < to && !value.compare_exchange_weak(now, to, std::memory_order_acq_rel)) {
  }
}

}  // namespace

void KnownGeneration::SawHandover(uint64_t deployed_generation, std::optional<int64_t> through_day) {
  RaiseTo(deployed_, deployed_generation);
  if (through_day) RaiseTo(handed_over_, *through_day);
}

}  // namespace clickatron::api

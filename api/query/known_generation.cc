// The persisted newest archive generation; see known_generation.h.
#include "query/known_generation.h"

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
  newest_ = persisted_ = value;
}

void KnownGeneration::Saw(uint64_t generation) {
  newest_ = std::max(newest_, generation);
  if (path_.empty() || persisted_ >= newest_) return;
  if (Status st = WriteFileAtomically(path_, std::to_string(newest_) + "\n"); !st.ok()) {
    spdlog::warn("cannot record archive generation {} in {}: {}", newest_, path_, st.ToString());
    return;
  }
  persisted_ = newest_;
}

}  // namespace clickatron::api

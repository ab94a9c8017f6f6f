#include "scrubber.h"

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/shard.h"

namespace clickatron::archive {
namespace {

constexpr size_t kScrubChunkBytes = 1 << 20;

}  // namespace

Scrubber::Scrubber(Options options) : options_(options) {
  if (options_.interval_seconds > 0 && options_.bytes_per_second > 0) thread_ = std::thread([this] { Run(); });
}

Scrubber::~Scrubber() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scrubber::SetFile(SortedFilePtr file) {
  std::lock_guard<std::mutex> lock(mu_);
  file_ = std::move(file);
}

void Scrubber::Damaged(const SortedFile& file, const std::string& why) {
  if (file.damaged()) return;  // said once
  file.MarkDamaged();
  ++counters_.mismatches;
  spdlog::error("archive file {} (generation {}) is damaged: {}; reads answer 503 ARCHIVE_DAMAGED until a good "
                "generation is loaded (POST /reload or /fetch)",
                file.path(), file.generation(), why);
}

bool Scrubber::CheckSize(const SortedFile& file) {
  if (!file.has_file() || file.damaged()) return false;
  Result<uint64_t> size = file.CurrentSize();
  if (!size.ok() || *size == file.data().size()) return false;
  Damaged(file, fmt::format("its size changed in place from {} to {} bytes", file.data().size(), *size));
  return true;
}

void Scrubber::Run() {
  const auto interval = std::chrono::seconds(options_.interval_seconds);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (wake_.wait_for(lock, interval, [this] { return stop_; })) return;
    SortedFilePtr file = file_;
    if (!file || !file->has_file() || file->damaged()) continue;
    lock.unlock();
    const bool finished = Pass(*file);
    lock.lock();
    if (finished) ++counters_.passes;
  }
}

bool Scrubber::Pass(const SortedFile& file) {
  const Manifest* manifest = file.manifest();
  if (manifest == nullptr) return true;
  std::vector<char> buffer(kScrubChunkBytes);
  uint32_t crc = 0;
  uint64_t offset = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || file_.get() != &file) return false;  // stopping, or another file is served now
    }
    Result<size_t> got = file.ReadAt(offset, buffer.data(), buffer.size());
    if (!got.ok()) {
      Damaged(file, got.status().message());
      return true;
    }
    if (*got == 0) break;
    crc = Crc32Extend(crc, std::string_view(buffer.data(), *got));
    offset += *got;
    counters_.bytes += *got;
    // Paced: never ahead of bytes_per_second since the pass began.
    const auto due = start + std::chrono::microseconds(offset * 1'000'000 / options_.bytes_per_second);
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_until(lock, due, [this] { return stop_; })) return false;
  }
  if (offset != manifest->bytes) {
    Damaged(file, fmt::format("it has {} bytes where its manifest says {}", offset, manifest->bytes));
  } else if (crc != manifest->crc32) {
    Damaged(file, fmt::format("its crc32 is {:08x} where its manifest says {:08x} (changed in place)",
                              crc, manifest->crc32));
  }
  return true;
}

}  // namespace clickatron::archive

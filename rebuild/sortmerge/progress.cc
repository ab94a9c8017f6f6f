#include "sortmerge/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace clickatron::rebuild {
namespace {

std::atomic<bool> g_quiet{false};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr auto kTerminalInterval = std::chrono::milliseconds(250);
constexpr auto kLogInterval = std::chrono::seconds(10);

}  // namespace

std::string HumanBytes(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string HumanCount(double count) {
  if (count >= 1e9) return fmt::format("{:.2f}G", count / 1e9);
  if (count >= 1e6) return fmt::format("{:.2f}M", count / 1e6);
  if (count >= 1e3) return fmt::format("{:.1f}k", count / 1e3);
  return fmt::format("{:.0f}", count);
}

void Progress::SetQuiet(bool quiet) { g_quiet.store(quiet); }

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)), start_ns_(NowNs()) {
  total_bytes_.store(total_bytes);
  tty_ = ::isatty(2) == 1;
  if (!g_quiet.load()) reporter_ = std::thread([this] { Run(); });
}

Progress::~Progress() { Finish(); }

double Progress::elapsed_seconds() const { return static_cast<double>(NowNs() - start_ns_) / 1e9; }

std::string Progress::Line() const {
  const double seconds = elapsed_seconds();
  const double records = static_cast<double>(this->records());
  const double bytes = static_cast<double>(this->bytes());
  const double total = static_cast<double>(total_bytes_.load(std::memory_order_relaxed));
  const double rate = seconds > 0 ? records / seconds : 0;
  const double byte_rate = seconds > 0 ? bytes / seconds : 0;
  std::string line = fmt::format("{}: {} records, {}", label_, HumanCount(records), HumanBytes(bytes));
  if (total > 0) line += fmt::format(" of {}", HumanBytes(total));
  line += fmt::format(", {} rec/s, {}/s", HumanCount(rate), HumanBytes(byte_rate));
  if (total > 0 && byte_rate > 0 && bytes < total) {
    line += fmt::format(", ETA {:.0f}s", (total - bytes) / byte_rate);
  }
  line += fmt::format(", {:.1f}s", seconds);
  return line;
}

void Progress::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, tty_ ? std::chrono::duration_cast<std::chrono::milliseconds>(kTerminalInterval)
                              : std::chrono::duration_cast<std::chrono::milliseconds>(kLogInterval));
    if (stop_) break;
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K", Line().c_str());
      std::fflush(stderr);
    } else {
      spdlog::info("{}", Line());
    }
  }
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (reporter_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    reporter_.join();
    if (tty_) std::fprintf(stderr, "\r\033[K");
    spdlog::info("{} (done)", Line());
  }
}

}  // namespace clickatron::rebuild

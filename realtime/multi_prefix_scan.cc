// See multi_prefix_scan.h.
#include "multi_prefix_scan.h"

#include <algorithm>

namespace clickatron::realtime {
namespace {

class ChainedScan : public LineSource {
 public:
  ChainedScan(std::vector<std::string> prefixes, OpenPrefixScan open)
      : prefixes_(std::move(prefixes)), open_(std::move(open)) {}

  bool Fill(std::string* out, size_t budget) override {
    const size_t start = out->size();
    while (status_.ok()) {
      const size_t grown = out->size() - start;
      if (!current_) {
        if (next_ >= prefixes_.size()) return false;
        // Open the next scan only when its lines are wanted now: a filled
        // budget returns first, so small answers still end in one call.
        if (grown >= budget) return true;
        Result<std::unique_ptr<LineSource>> scan = open_(prefixes_[next_++]);
        if (!scan.ok()) {
          status_ = scan.status();
          return false;
        }
        current_ = std::move(scan).value();
        continue;
      }
      if (grown >= budget) return true;
      if (current_->Fill(out, budget - grown)) continue;
      finished_lines_ += current_->lines();
      status_ = current_->status();
      current_.reset();
    }
    return false;
  }
  Status status() const override { return status_; }
  uint64_t lines() const override { return finished_lines_ + (current_ ? current_->lines() : 0); }

 private:
  std::vector<std::string> prefixes_;
  OpenPrefixScan open_;
  size_t next_ = 0;
  std::unique_ptr<LineSource> current_;
  uint64_t finished_lines_ = 0;
  Status status_;
};

}  // namespace

std::vector<std::string> DisjointPrefixes(std::vector<std::string> prefixes) {
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> out;
  for (std::string& p : prefixes) {
    // Sorted: every string extending a kept prefix follows it directly, so
    // comparing with the last kept one is enough (a duplicate extends it too).
    if (!out.empty() && p.starts_with(out.back())) continue;
    out.push_back(std::move(p));
  }
  return out;
}

std::unique_ptr<LineSource> ChainPrefixScans(std::vector<std::string> prefixes, OpenPrefixScan open) {
  return std::make_unique<ChainedScan>(std::move(prefixes), std::move(open));
}

}  // namespace clickatron::realtime

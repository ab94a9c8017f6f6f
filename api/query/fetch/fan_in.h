// Joins parallel asynchronous requests: `done` runs once, after every part
// has reported, with the first error any part gave (or OK). Everything runs
// on the loop thread, so a plain counter is enough.
#pragma once

#include <functional>
#include <memory>

#include "clickatron/status.h"

namespace clickatron::api {

class FanIn : public std::enable_shared_from_this<FanIn> {
 public:
  static std::shared_ptr<FanIn> Create(std::function<void(Status)> done) {
    return std::shared_ptr<FanIn>(new FanIn(std::move(done)));
  }
  // A callback for one part; call it exactly once. Take every Part() before
  // Arm(), so that a part answering synchronously cannot finish early.
  std::function<void(Status)> Part() {
    ++pending_;
    return [self = shared_from_this()](Status st) { self->Report(std::move(st)); };
  }
  // No more parts will be added; runs `done` now if all have reported.
  void Arm() {
    armed_ = true;
    MaybeFinish();
  }

 private:
  explicit FanIn(std::function<void(Status)> done) : done_(std::move(done)) {}
  void Report(Status st) {
    if (first_error_.ok() && !st.ok()) first_error_ = std::move(st);
    --pending_;
    MaybeFinish();
  }
  void MaybeFinish() {
    if (!armed_ || pending_ > 0 || !done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(first_error_));
  }

  std::function<void(Status)> done_;
  Status first_error_;
  int pending_ = 0;
  bool armed_ = false;
};

}  // namespace clickatron::api

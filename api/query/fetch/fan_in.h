// Joins parallel asynchronous requests: `done` runs once, after every part
// has reported, with the first error any part gave (or OK). Everything runs
// on the loop thread, so a plain counter is enough.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

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

// The common case: `n` requests sent at once (send(i, answer) sends the i-th,
// whose answer calls `answer` once); `done` gets their values in order, or
// the first error any of them gave.
template <typename T>
void FanInAll(size_t n, const std::function<void(size_t i, std::function<void(Result<T>)> answer)>& send,
              std::function<void(Result<std::vector<T>>)> done) {
  auto values = std::make_shared<std::vector<T>>(n);
  auto join = FanIn::Create([values, done = std::move(done)](Status st) {
    if (!st.ok()) return done(std::move(st));
    done(std::move(*values));
  });
  std::vector<std::function<void(Status)>> parts;
  for (size_t i = 0; i < n; ++i) parts.push_back(join->Part());
  join->Arm();  // nothing sent yet: only the parts can finish it now
  for (size_t i = 0; i < n; ++i) {
    send(i, [values, i, part = std::move(parts[i])](Result<T> value) {
      if (!value.ok()) return part(value.status());
      (*values)[i] = std::move(*value);
      part(Status::Ok());
    });
  }
}

}  // namespace clickatron::api

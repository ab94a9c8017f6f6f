#include "reloader.h"

#include <memory>
#include <utility>

namespace clickatron::archive {

Reloader::Reloader(HttpServer& server, Load reload, Install install)
    : server_(server), reload_(std::move(reload)), install_(std::move(install)) {}

Reloader::~Reloader() {
  if (thread_.joinable()) thread_.join();
}

void Reloader::Request(Waiter waiter) {
  if (queued_.empty() || queued_.back().load) queued_.push_back(Job{});
  if (waiter) queued_.back().waiters.push_back(std::move(waiter));
  if (!running_) StartNext();
}

void Reloader::RequestLoad(Load load, Waiter waiter) {
  Job job{std::move(load), {}};
  if (waiter) job.waiters.push_back(std::move(waiter));
  queued_.push_back(std::move(job));
  if (!running_) StartNext();
}

void Reloader::StartNext() {
  // The previous thread has posted its result and is ending (or has ended).
  if (thread_.joinable()) thread_.join();
  Job job = std::move(queued_.front());
  queued_.pop_front();
  running_ = true;
  running_waiters_ = std::move(job.waiters);
  Load load = job.load ? std::move(job.load) : reload_;
  thread_ = std::thread([this, load = std::move(load)] {
    auto result = std::make_shared<Result<SortedFilePtr>>(load());
    // If the loop has stopped, this never runs and the result is dropped
    // with the server.
    server_.RunInLoop([this, result] { Finished(std::move(*result)); });
  });
}

void Reloader::Finished(Result<SortedFilePtr> result) {
  Status outcome = install_(std::move(result));
  std::vector<Waiter> done;
  done.swap(running_waiters_);
  running_ = false;
  if (!queued_.empty()) StartNext();
  for (auto& waiter : done) waiter(outcome);
}

}  // namespace clickatron::archive

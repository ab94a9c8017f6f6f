#include "reloader.h"

#include <utility>

namespace clickatron::archive {

Reloader::Reloader(HttpServer& server, Load load, Install install)
    : server_(server), load_(std::move(load)), install_(std::move(install)) {}

Reloader::~Reloader() {
  if (thread_.joinable()) thread_.join();
}

void Reloader::Request(Waiter waiter) {
  if (loading_) {
    another_requested_ = true;
    if (waiter) waiting_next_.push_back(std::move(waiter));
    return;
  }
  if (waiter) waiting_current_.push_back(std::move(waiter));
  Start();
}

void Reloader::Start() {
  // The previous thread has posted its result and is ending (or has ended).
  if (thread_.joinable()) thread_.join();
  loading_ = true;
  thread_ = std::thread([this] {
    auto result = std::make_shared<Result<SortedFilePtr>>(load_());
    // If the loop has stopped, this never runs and the result is dropped
    // with the server.
    server_.RunInLoop([this, result] { Finished(std::move(*result)); });
  });
}

void Reloader::Finished(Result<SortedFilePtr> result) {
  Status outcome = install_(std::move(result));
  std::vector<Waiter> done;
  done.swap(waiting_current_);
  loading_ = false;
  if (another_requested_) {
    another_requested_ = false;
    waiting_current_.swap(waiting_next_);
    Start();
  }
  for (auto& waiter : done) waiter(outcome);
}

}  // namespace clickatron::archive

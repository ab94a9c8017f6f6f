#include "clickatron/serial_executor.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace clickatron {

SerialExecutor::SerialExecutor(std::string name, Priority priority) : name_(std::move(name)), priority_(priority) {
  thread_ = std::thread([this] { Loop(); });
}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SerialExecutor::Post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void SerialExecutor::Loop() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  if (priority_ == Priority::kIdle) {
    sched_param param{};
    // For the calling thread only (Linux: pid 0 is this thread).
    if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
      spdlog::warn("{}: cannot run at idle priority ({}); it runs at normal priority", name_, std::strerror(errno));
    }
  }
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and everything posted has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace clickatron

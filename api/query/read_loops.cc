#include "query/read_loops.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <string>

namespace clickatron::api {

Result<std::unique_ptr<ReadLoops>> ReadLoops::Start(const DaemonContext& ctx, HttpServer& primary,
                                                    const HttpClient::Options& client_options,
                                                    std::shared_ptr<ReadShared> shared,
                                                    const std::function<void(HttpServer&)>& also_route) {
  std::unique_ptr<ReadLoops> loops(new ReadLoops());
  for (int i = 1; i < shared->loops; ++i) {  // the first loop is `primary`
    Loop loop;
    auto server = primary.NewSibling();
    if (!server.ok()) return server.status();
    loop.server = std::move(*server);
    loop.client = HttpClient::Create(loop.server->base(), client_options);
    auto read = ReadPath::Create(ctx, *loop.server, *loop.client, SystemClock::Instance(), shared);
    if (!read.ok()) return read.status();
    loop.read = std::move(*read);
    if (also_route) also_route(*loop.server);
    loops->loops_.push_back(std::move(loop));
  }
  // Threads start once every loop is made: a failure above leaves none running.
  for (size_t i = 0; i < loops->loops_.size(); ++i) {
    HttpServer* server = loops->loops_[i].server.get();
    const size_t n = i + 2;
    loops->loops_[i].thread = std::thread([server, &primary, n] {
      if (Status st = server->Run(); !st.ok()) {
        // Its socket would still take a share of the connections: stop all.
        spdlog::critical("read loop {}: {}; stopping", n, st.ToString());
        primary.Stop();
      }
    });
    // Named here, not by the thread itself: the name is there once the
    // loops are made, before the daemon answers anyone (tools and tests
    // looking for read-loop-N never race the thread's start).
    pthread_setname_np(loops->loops_[i].thread.native_handle(), ("read-loop-" + std::to_string(n)).c_str());
  }
  return loops;
}

ReadLoops::~ReadLoops() { Stop(); }

void ReadLoops::BeginStop() {
  for (Loop& loop : loops_) loop.server->Stop();
}

void ReadLoops::Stop() {
  BeginStop();
  for (Loop& loop : loops_) {
    if (loop.thread.joinable()) loop.thread.join();
  }
  loops_.clear();
}

}  // namespace clickatron::api

// The read path on more event loops than the first ([api] read_loops): one
// loop was the ceiling of an API node, with cores left idle beside it.
//
// Each extra loop is a sibling server on the API's port
// (HttpServer::NewSibling) with an HTTP client of its own to the archive and
// realtime daemons and a read path of its own (its own coalescers, archive
// answer cache and lookup cache; figures and the known archive generation
// are the node's, ReadShared). The kernel spreads client connections over
// the loops. A query is answered on the loop its connection landed on;
// increments and admin requests are handed to the first loop, where the
// write path lives, and answered through the loop that received them.
//
// Thread-safety: Start, BeginStop and Stop from the first loop's thread
// (BeginStop is its stop drain, Stop its OnStop hook). The threads are
// named read-loop-2, read-loop-3, … (top -H, /proc/PID/task/*/comm).
#pragma once

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "clickatron/daemon.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "clickatron/status.h"
#include "query/read_path.h"

namespace clickatron::api {

class ReadLoops {
 public:
  // Makes shared->loops - 1 siblings of `primary` (whose routes must be set
  // by now), each with a read path and the routes `also_route` sets, and
  // starts their threads. No siblings for a single loop.
  static Result<std::unique_ptr<ReadLoops>> Start(const DaemonContext& ctx, HttpServer& primary,
                                                  const HttpClient::Options& client_options,
                                                  std::shared_ptr<ReadShared> shared,
                                                  const std::function<void(HttpServer&)>& also_route);
  ~ReadLoops();
  ReadLoops(const ReadLoops&) = delete;
  ReadLoops& operator=(const ReadLoops&) = delete;

  // Begins every sibling loop's stop (each answers the queries it took and
  // lingers for its clients, as the first loop does, at the same time as
  // it): the first loop's stop drain. Stop() then waits for them.
  void BeginStop();
  // Stops every sibling loop and waits for its thread; then frees them.
  // Idempotent.
  void Stop();

 private:
  ReadLoops() = default;
  struct Loop {
    // Declared in the order they are made: destroyed read path first.
    std::unique_ptr<HttpServer> server;
    std::unique_ptr<HttpClient> client;
    std::unique_ptr<ReadPath> read;
    std::thread thread;
  };
  std::vector<Loop> loops_;
};

}  // namespace clickatron::api

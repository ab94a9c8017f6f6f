// Reloader: runs file loads off the event loop, one at a time, and hands each
// result back to the loop.
//
// A load maps and checks a whole file (a crc32 pass: about a second per GB),
// so it runs on its own thread while the loop keeps answering reads from the
// generation it already has. Requests are coalesced: a request made while a
// load runs is served by the *next* load, which starts when the running one
// ends, so every caller's answer reflects the file at the path after it asked
// (the rebuild renames, then asks).
//
// Thread-safety: Request() and the callbacks run on the loop thread only.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "clickatron/http_server.h"
#include "clickatron/status.h"
#include "sorted_file.h"

namespace clickatron::archive {

class Reloader {
 public:
  // Runs on the reload thread.
  using Load = std::function<Result<SortedFilePtr>()>;
  // Runs on the loop thread once per finished load, before the waiters are
  // told; returns the outcome they get (it may still refuse the file).
  using Install = std::function<Status(Result<SortedFilePtr>)>;
  using Waiter = std::function<void(const Status&)>;

  Reloader(HttpServer& server, Load load, Install install);
  ~Reloader();  // waits for a running load (its result is dropped)
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // Loop thread. `waiter` (may be null) gets the outcome of a load that
  // starts after this call.
  void Request(Waiter waiter);
  bool loading() const { return loading_; }

 private:
  void Start();                                // loop thread
  void Finished(Result<SortedFilePtr> result);  // loop thread

  HttpServer& server_;
  Load load_;
  Install install_;
  std::thread thread_;
  bool loading_ = false;
  bool another_requested_ = false;
  std::vector<Waiter> waiting_current_;  // told when the running load ends
  std::vector<Waiter> waiting_next_;     // asked while it ran: served by the next one
};

}  // namespace clickatron::archive

// Reloader: runs file loads off the event loop, one at a time, and hands each
// result back to the loop.
//
// A load maps and checks a whole file (a crc32 pass: about a second per GB),
// or fetches a generation from another host first, so it runs on its own
// thread while the loop keeps answering reads from the generation it already
// has. Loads run in the order asked. Plain reloads are coalesced: a reload
// asked while another waits its turn joins it, and a reload asked while one
// runs is served by the *next* one, so every caller's answer reflects the
// file at the path after it asked (the rebuild renames, then asks).
//
// Thread-safety: Request*, loading() and the callbacks run on the loop thread
// only; a Load runs on the reload thread.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "clickatron/http_server.h"
#include "clickatron/status.h"
#include "sorted_file.h"

namespace clickatron::archive {

class Reloader {
 public:
  // Runs on the reload thread. A null file: nothing to change (a fetch of
  // the generation already served).
  using Load = std::function<Result<SortedFilePtr>()>;
  // Runs on the loop thread once per finished load, before the waiters are
  // told; returns the outcome they get (it may still refuse the file).
  using Install = std::function<Status(Result<SortedFilePtr>)>;
  using Waiter = std::function<void(const Status&)>;

  // `reload` is the plain load: the file now at the member's path.
  Reloader(HttpServer& server, Load reload, Install install);
  ~Reloader();  // waits for a running load (its result is dropped)
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // A plain reload; `waiter` (may be null) gets the outcome of a load that
  // starts after this call.
  void Request(Waiter waiter);
  // Another load (a fetch), after those asked before it.
  void RequestLoad(Load load, Waiter waiter);
  bool loading() const { return running_; }

 private:
  struct Job {
    Load load;  // null: the plain reload
    std::vector<Waiter> waiters;
  };
  void StartNext();                              // loop thread
  void Finished(Result<SortedFilePtr> result);  // loop thread

  HttpServer& server_;
  Load reload_;
  Install install_;
  std::thread thread_;
  bool running_ = false;
  std::vector<Waiter> running_waiters_;
  std::deque<Job> queued_;
};

}  // namespace clickatron::archive

// clickatron-realtime: one realtime shard (docs/protocols.md). Started as
//   clickatron-realtime --config FILE --member NAME
#include <spdlog/spdlog.h>

#include <cstdio>

#include "clickatron/daemon.h"
#include "realtime_server.h"

int main(int argc, char** argv) {
  using namespace clickatron;
  Result<DaemonContext> context = StartDaemon(argc, argv, "clickatron-realtime", MemberRole::kRealtime);
  if (!context.ok()) {
    std::fprintf(stderr, "%s\n", context.status().ToString().c_str());
    return 2;
  }
  Result<std::unique_ptr<realtime::RealtimeServer>> server = realtime::RealtimeServer::Create(*context);
  if (!server.ok()) {
    spdlog::critical("cannot start: {}", server.status().ToString());
    return 1;
  }
  Status st = (*server)->Run();
  if (!st.ok()) {
    spdlog::critical("stopped on error: {}", st.ToString());
    return 1;
  }
  spdlog::info("stopped");
  return 0;
}

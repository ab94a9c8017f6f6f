// Logging: spdlog, one line per event, with the daemon and member in every
// line so merged logs stay readable. Daemons log to stderr; scripts/run
// redirects each to var/log/<member>.log.
//
// Thread-safety: InitLogging once, before other threads start; spdlog's
// default logger may then be used from any thread.
#pragma once

#include <string>

namespace clickatron {

// Sets the default logger's pattern and level ("info", "debug", …).
void InitLogging(const std::string& daemon, const std::string& member, const std::string& level);

}  // namespace clickatron

#include "clickatron/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace clickatron {

void InitLogging(const std::string& daemon, const std::string& member, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt(daemon + "/" + member);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ [%n] %v", spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace clickatron

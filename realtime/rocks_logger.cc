#include "rocks_logger.h"

#include <cstdarg>
#include <cstdio>

#include <spdlog/spdlog.h>

namespace clickatron::realtime {
namespace {

class DaemonLogForRocks : public rocksdb::Logger {
 public:
  DaemonLogForRocks() : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override { Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap); }

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    const spdlog::level::level_enum ours = Ours(level);
    if (!spdlog::should_log(ours)) return;
    char line[1024];
    const int n = std::vsnprintf(line, sizeof line, format, ap);
    if (n < 0) return;
    spdlog::log(ours, "rocksdb: {}", line);
  }

 private:
  static spdlog::level::level_enum Ours(rocksdb::InfoLogLevel level) {
    switch (level) {
      case rocksdb::InfoLogLevel::DEBUG_LEVEL:
        return spdlog::level::trace;
      case rocksdb::InfoLogLevel::INFO_LEVEL:
      case rocksdb::InfoLogLevel::HEADER_LEVEL:
        return spdlog::level::debug;
      case rocksdb::InfoLogLevel::WARN_LEVEL:
        return spdlog::level::warn;
      default:  // ERROR, FATAL
        return spdlog::level::err;
    }
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewDaemonLogForRocks() { return std::make_shared<DaemonLogForRocks>(); }

}  // namespace clickatron::realtime

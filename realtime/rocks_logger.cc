#include "rocks_logger.h"

#include <cstdarg>
#include <cstdio>
#include <string>

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
    va_list again;
    va_copy(again, ap);
    char small[1024];
    const int n = std::vsnprintf(small, sizeof small, format, ap);
    std::string line;
    if (n >= 0 && static_cast<size_t>(n) < sizeof small) {
      line.assign(small, static_cast<size_t>(n));
    } else if (n >= 0) {  // longer (RocksDB's event and stats lines): formatted again whole
      line.resize(static_cast<size_t>(n) + 1);
      std::vsnprintf(line.data(), line.size(), format, again);
      line.resize(static_cast<size_t>(n));
    }
    va_end(again);
    if (n < 0) return;
    while (!line.empty() && line.back() == '\n') line.pop_back();
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

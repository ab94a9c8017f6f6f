// The C library as the reference for zone offsets: while a LibcZone lives,
// TZ names its zone, and localtime_r's tm_gmtoff is the offset glibc reads
// from the same tzdata. Setting TZ is what the daemon must never do (it is
// not thread-safe); a test process asks from one thread only.
#pragma once

#include <stdlib.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>

namespace clickatron {

class LibcZone {
 public:
  // `tz`: a zone name ("America/New_York") or a POSIX rule.
  explicit LibcZone(const std::string& tz) {
    if (const char* old = getenv("TZ")) saved_ = old;
    setenv("TZ", tz.c_str(), 1);
    tzset();
  }
  ~LibcZone() {
    if (saved_) {
      setenv("TZ", saved_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  LibcZone(const LibcZone&) = delete;
  LibcZone& operator=(const LibcZone&) = delete;

  int64_t OffsetAt(int64_t unix_seconds) const {
    const time_t t = static_cast<time_t>(unix_seconds);
    struct tm tm {};
    localtime_r(&t, &tm);
    return tm.tm_gmtoff;
  }

 private:
  std::optional<std::string> saved_;
};

}  // namespace clickatron

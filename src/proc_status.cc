#include "clickatron/proc_status.h"

#include <charconv>
#include <fstream>
#include <string>

namespace clickatron {

int64_t ProcStatusKb(pid_t pid, std::string_view field) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view text(line);
    if (text.size() <= field.size() || text.substr(0, field.size()) != field || text[field.size()] != ':') continue;
    std::string_view value = text.substr(field.size() + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    int64_t kb = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), kb);
    return ec == std::errc() && end != value.data() ? kb : -1;
  }
  return -1;
}

}  // namespace clickatron

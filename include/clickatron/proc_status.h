// A process's figures from /proc/PID/status (VmRSS, VmHWM, RssFile…), the
// kernel's own count of its memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

namespace clickatron {

// The field's value in KiB; pid 0 is this process. -1 when the process or
// the field is not there.
int64_t ProcStatusKb(pid_t pid, std::string_view field);

}  // namespace clickatron

#include "archive_stats.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace clickatron::archive {
namespace {

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

nlohmann::json ArchiveStatsJson(const ArchiveCounters& c, const SortedFile* file, bool reload_running) {
  nlohmann::json served = nullptr;
  if (file != nullptr) {
    std::time_t mapped = std::chrono::system_clock::to_time_t(file->mapped_at());
    served = {{"path", file->path()},
              {"has_file", file->has_file()},
              {"generation", file->generation()},
              {"last_day", file->last_day()},
              {"bytes", file->data().size()},
              {"records", file->records()},
              {"mapped_since", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(mapped))},
              {"mapped_since_unix", UnixSeconds(file->mapped_at())}};
  }
  return {{"archive",
           {{"file", served},
            {"requests", {{"get", c.get_requests}, {"mget", c.mget_requests}, {"fwmatch", c.fwmatch_requests}}},
            {"hits", c.hits},
            {"misses", c.misses},
            {"fwmatch_streamed", c.fwmatch_streamed},
            {"bytes_served", c.bytes_served},
            {"reloads_ok", c.reloads_ok},
            {"reloads_failed", c.reloads_failed},
            {"reload_running", reload_running},
            {"last_load_ms", c.last_load_ms},
            {"last_reload_error", c.last_reload_error},
            {"generations_mapped", SortedFile::alive_count()}}}};
}

std::string ArchiveStatsPrometheus(const ArchiveCounters& c, const SortedFile* file) {
  std::string out;
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    out += fmt::format("# HELP clickatron_archive_{0} {1}\n# TYPE clickatron_archive_{0} {2}\nclickatron_archive_{0} {3}\n",
                       name, help, type, value);
  };
  out += "# HELP clickatron_archive_requests_total Read requests by endpoint.\n"
         "# TYPE clickatron_archive_requests_total counter\n";
  out += fmt::format("clickatron_archive_requests_total{{endpoint=\"get\"}} {}\n", c.get_requests);
  out += fmt::format("clickatron_archive_requests_total{{endpoint=\"mget\"}} {}\n", c.mget_requests);
  out += fmt::format("clickatron_archive_requests_total{{endpoint=\"fwmatch\"}} {}\n", c.fwmatch_requests);
  metric("hits_total", "counter", "Keys found by get and mget.", c.hits);
  metric("misses_total", "counter", "Keys not found by get and mget.", c.misses);
  metric("bytes_served_total", "counter", "Answer body bytes of get, mget and fwmatch.", c.bytes_served);
  metric("reloads_ok_total", "counter", "Reloads that swapped in a file.", c.reloads_ok);
  metric("reloads_failed_total", "counter", "Reloads refused (the old file kept serving).", c.reloads_failed);
  metric("file_loaded", "gauge", "1 when a generation (or the empty no-file state) is serving.", file ? 1 : 0);
  metric("file_bytes", "gauge", "Size of the serving file.", file ? file->data().size() : 0);
  metric("file_records", "gauge", "Records (lines) in the serving file.", file ? file->records() : 0);
  metric("generation", "gauge", "Manifest generation of the serving file (0: none).", file ? file->generation() : 0);
  metric("mapped_since_seconds", "gauge", "Unix time the serving file was mapped.",
         file ? UnixSeconds(file->mapped_at()) : 0);
  metric("generations_mapped", "gauge", "Generations mapped, including old ones still read by requests.",
         SortedFile::alive_count());
  return out;
}

}  // namespace clickatron::archive

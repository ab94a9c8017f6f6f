#include "archive_stats.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

#include "clickatron/metrics_table.h"
#include "scrubber.h"

namespace clickatron::archive {
namespace {

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

nlohmann::json ArchiveStatsJson(const ArchiveCounters& c, const ScrubCounters& scrub, const SortedFile* file,
                                bool reload_running) {
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
            {"files_served", c.files_served},
            {"file_bytes_served", c.file_bytes_served},
            {"reloads_ok", c.reloads_ok},
            {"reloads_failed", c.reloads_failed},
            {"reload_running", reload_running},
            {"last_load_ms", c.last_load_ms},
            {"last_reload_error", c.last_reload_error},
            {"catch_up", c.catch_up},
            {"generations_mapped", SortedFile::alive_count()},
            {"damage",
             {{"serving_damaged", file != nullptr && file->damaged()},
              {"damaged_generations", c.damaged_generations},
              {"refused_reads", c.damaged_refusals},
              {"scrub_passes", scrub.passes.load()},
              {"scrub_bytes", scrub.bytes.load()},
              {"scrub_mismatches", scrub.mismatches.load()},
              {"mapping_faults", MappedFileFaults()}}}}}};
}

namespace {

// /metrics is rendered from the /stats JSON by this table (metrics_table.h):
// every figure of /stats has its row, so the two views cannot drift. Left
// out as rows, not being figures: file.path and file.last_day (labels of
// clickatron_archive_file_info instead), file.mapped_since (the text form of
// file.mapped_since_unix), catch_up (text) and last_reload_error (text;
// clickatron_archive_last_reload_failed says whether there is one).
constexpr MetricRow kMetricRows[] = {
    {"/archive/requests/{endpoint}", "clickatron_archive_requests_total", "counter", "Read requests by endpoint."},
    {"/archive/hits", "clickatron_archive_hits_total", "counter", "Keys found by get and mget."},
    {"/archive/misses", "clickatron_archive_misses_total", "counter", "Keys not found by get and mget."},
    {"/archive/fwmatch_streamed", "clickatron_archive_fwmatch_streamed_total", "counter",
     "fwmatch answers large enough to be streamed in chunks."},
    {"/archive/bytes_served", "clickatron_archive_bytes_served_total", "counter",
     "Answer body bytes of get, mget and fwmatch."},
    {"/archive/files_served", "clickatron_archive_files_served_total", "counter",
     "Whole files sent by GET /file to replicas catching up."},
    {"/archive/file_bytes_served", "clickatron_archive_file_bytes_served_total", "counter",
     "Bytes of whole files sent by GET /file."},
    {"/archive/reloads_ok", "clickatron_archive_reloads_ok_total", "counter", "Reloads that swapped in a file."},
    {"/archive/reloads_failed", "clickatron_archive_reloads_failed_total", "counter",
     "Reloads refused (the old file kept serving)."},
    {"/archive/reload_running", "clickatron_archive_reload_running", "gauge", "1 while a reload loads a file."},
    {"/archive/last_load_ms", "clickatron_archive_last_load_duration_seconds", "gauge",
     "How long the last file load took (at start or by a reload, whether it was installed or not).", {}, 1e-3},
    {"/archive/file/has_file", "clickatron_archive_file_present", "gauge",
     "1 when the serving generation has a file, 0 when it is the empty no-file state or nothing serves."},
    {"/archive/file/bytes", "clickatron_archive_file_bytes", "gauge", "Size of the serving file."},
    {"/archive/file/records", "clickatron_archive_file_records", "gauge", "Records (lines) in the serving file."},
    {"/archive/file/generation", "clickatron_archive_generation", "gauge",
     "Manifest generation of the serving file (0: none)."},
    {"/archive/file/mapped_since_unix", "clickatron_archive_mapped_since_seconds", "gauge",
     "Unix time the serving file was mapped (its last successful load; 0: none)."},
    {"/archive/damage/serving_damaged", "clickatron_archive_serving_damaged", "gauge",
     "1 while the serving generation is damaged (changed under its mapping): reads answer 503 ARCHIVE_DAMAGED."},
    {"/archive/damage/damaged_generations", "clickatron_archive_damaged_generations_total", "counter",
     "Generations found damaged (scrub, size check or a fault under the mapping)."},
    {"/archive/damage/refused_reads", "clickatron_archive_damaged_refused_reads_total", "counter",
     "Reads answered 503 ARCHIVE_DAMAGED."},
    {"/archive/damage/scrub_passes", "clickatron_archive_scrub_passes_total", "counter",
     "Whole-file scrub passes finished."},
    {"/archive/damage/scrub_bytes", "clickatron_archive_scrub_bytes_total", "counter", "Bytes read by the scrub."},
    {"/archive/damage/scrub_mismatches", "clickatron_archive_scrub_mismatches_total", "counter",
     "Files the scrub or the size check found not matching their manifest."},
    {"/archive/damage/mapping_faults", "clickatron_archive_mapping_faults_total", "counter",
     "SIGBUS faults under a mapped file (it shrank in place), absorbed as damage."},
    {"/archive/generations_mapped", "clickatron_archive_generations_mapped", "gauge",
     "Generations mapped, including old ones still read by requests."},
};

}  // namespace

std::string ArchiveStatsPrometheus(const nlohmann::json& stats, std::string_view daemon, std::string_view member) {
  const std::string labels = BaseLabels(daemon, member);
  const nlohmann::json& archive = stats.at("archive");
  const nlohmann::json& file = archive.at("file");
  std::string out;
  auto gauge = [&](std::string_view name, std::string_view help, std::string_view extra, auto value) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n{0}{{{2}{3}}} {4}\n", name, help, labels, extra, value);
  };
  gauge("clickatron_archive_file_loaded", "1 when a generation (or the empty no-file state) is serving.", "",
        file.is_null() ? 0 : 1);
  if (!file.is_null()) {
    gauge("clickatron_archive_file_info", "The serving file: path and last day (UTC) it holds; always 1.",
          fmt::format(",path=\"{}\",last_day=\"{}\"", EscapeLabelValue(file.value("path", "")),
                      EscapeLabelValue(file.value("last_day", ""))),
          1);
  }
  gauge("clickatron_archive_last_reload_failed",
        "1 when the last load or reload failed (see /stats last_reload_error).", "",
        archive.value("last_reload_error", "").empty() ? 0 : 1);
  if (file.is_null()) {
    // Nothing serves: the file's gauges read 0 rather than vanish.
    nlohmann::json zeroed = stats;
    zeroed["archive"]["file"] = {
        {"has_file", false}, {"bytes", 0}, {"records", 0}, {"generation", 0}, {"mapped_since_unix", 0}};
    return RenderMetrics(zeroed, kMetricRows, labels) + out;
  }
  return RenderMetrics(stats, kMetricRows, labels) + out;
}

}  // namespace clickatron::archive

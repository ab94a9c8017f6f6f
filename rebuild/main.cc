// clickatron-rebuild: the nightly archive build, and the door for history.
//
//   clickatron-rebuild run    --config FILE --date YYYY-MM-DD [--force]
//   clickatron-rebuild load   --config FILE [--format realtime|archive] [--now] [--force] DATAFILE…
//   clickatron-rebuild restate --config FILE --ns NS --from DAY --to DAY [--keys-in-file] [--now] DATAFILE…
//   clickatron-rebuild status --config FILE
//   clickatron-rebuild task   --config FILE --dir TASK_DIR   (what an engine runs on a host)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>

#include <spdlog/spdlog.h>

#include "clickatron/config.h"
#include "clickatron/logging.h"
#include "pipeline.h"
#include "status_report.h"
#include "task_dir.h"

namespace {

using clickatron::Status;

bool g_logging = false;  // once the cluster file is read, errors go to the log

int Report(const Status& st) {
  if (st.ok()) return 0;
  if (g_logging) {
    spdlog::error("{}", st.ToString());
  } else {
    std::fprintf(stderr, "clickatron-rebuild: %s\n", st.ToString().c_str());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"clickatron-rebuild: export, sort, merge and deploy the archive; load history"};
  app.require_subcommand(1);
  std::string config_path;
  std::string date;
  bool force = false;
  std::string format = "realtime";
  bool now = false;
  std::vector<std::string> files;
  int export_timeout_s = 6 * 3600;
  int transfer_timeout_s = 6 * 3600;

  CLI::App* run = app.add_subcommand("run", "fold one day (yesterday) into a new archive generation and deploy it");
  run->add_option("--config", config_path, "cluster file")->required();
  run->add_option("--date", date, "the day to fold, YYYY-MM-DD (UTC)")->required();
  run->add_flag("--force", force, "fold the day even if the archive's last_day already reaches it");
  bool build_only = false;
  run->add_flag("--build-only", build_only,
                "build the generation and stop before deploying it (the next run deploys it)");
  run->add_option("--export-timeout", export_timeout_s, "seconds one realtime export may take");
  run->add_option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
                  "seconds an archive replica may take to fetch and load its file (and the rebuild to fetch "
                  "a generation it does not have)");

  CLI::App* load = app.add_subcommand("load", "queue historical data for the next generation (or deploy it --now)");
  load->add_option("--config", config_path, "cluster file")->required();
  load->add_option("--format", format, "format of the data files")->check(CLI::IsMember({"realtime", "archive"}));
  load->add_flag("--now", now, "build and deploy a generation with this data at once");
  load->add_flag("--force", force,
                 "load files even though an earlier load has the same content (it would be counted twice)");
  load->add_option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
                  "seconds an archive replica may take to fetch and load its file (and the rebuild to fetch "
                  "a generation it does not have)");
  std::optional<double> max_bad_line_ratio;
  load->add_option("--max-bad-line-ratio", max_bad_line_ratio,
                   "for this load only: the share of bad lines (0..1) above which it fails and queues nothing "
                   "(default: [rebuild] max_bad_line_ratio)")
      ->check(CLI::Range(0.0, 1.0));
  load->add_option("files", files, "data files (plain or gzip)")->required();

  clickatron::rebuild::RestateOptions restate_options;
  bool restate_now = false;
  std::string restate_format = "realtime";
  CLI::App* restate = app.add_subcommand(
      "restate", "replace a namespace's closed days with what the files say (deployed by the next generation, or --now)");
  restate->add_option("--config", config_path, "cluster file")->required();
  restate->add_option("--ns", restate_options.ns, "the namespace restated")->required();
  restate->add_option("--from", restate_options.from_day, "the first day restated, YYYY-MM-DD (UTC)")->required();
  restate->add_option("--to", restate_options.to_day, "the last day restated, YYYY-MM-DD (UTC), inclusive")->required();
  restate->add_flag("--keys-in-file", restate_options.keys_in_file,
                    "replace only the keys that appear in the files (every other key of the namespace is untouched)");
  restate->add_flag("--now", restate_now, "build and deploy a generation with the restatement at once");
  restate->add_option("--format", restate_format, "format of the data files")
      ->check(CLI::IsMember({"realtime", "archive"}));
  restate->add_option("--max-bad-line-ratio", restate_options.max_bad_line_ratio,
                      "the share of bad lines (0..1) above which it fails and queues nothing")
      ->check(CLI::Range(0.0, 1.0));
  restate->add_option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
                      "seconds an archive replica may take to fetch and load its file");
  restate->add_option("files", restate_options.files, "the authoritative data files (plain or gzip)")->required();

  CLI::App* status = app.add_subcommand("status", "which steps are done per day; the serving generation");
  status->add_option("--config", config_path, "cluster file")->required();

  std::string task_dir;
  CLI::App* task = app.add_subcommand(
      "task", "run one rebuild task from its directory (TASK/in/task.json); engines run this on their hosts");
  task->add_option("--config", config_path, "cluster file")->required();
  task->add_option("--dir", task_dir, "the task's directory")->required();

  CLI11_PARSE(app, argc, argv);

  auto cluster = clickatron::ClusterConfig::Load(config_path);
  if (!cluster.ok()) return Report(cluster.status());
  clickatron::InitLogging("clickatron-rebuild", "rebuild", cluster->log_level);
  g_logging = true;

  clickatron::rebuild::Timeouts timeouts;
  timeouts.export_ms = export_timeout_s * 1000;
  timeouts.transfer_ms = transfer_timeout_s * 1000;
  if (run->parsed()) {
    return Report(clickatron::rebuild::RunDay(*cluster, {date, force, build_only, timeouts}));
  }
  if (task->parsed()) {
    clickatron::rebuild::TaskResources resources;
    resources.threads = cluster->rebuild.threads;
    resources.memory_bytes = cluster->rebuild.memory_mb << 20;
    return Report(clickatron::rebuild::RunTaskDir({task_dir}, *cluster, resources));
  }
  if (load->parsed()) {
    clickatron::rebuild::LoadOptions options;
    options.files = files;
    options.format =
        format == "archive" ? clickatron::rebuild::InputFormat::kArchive : clickatron::rebuild::InputFormat::kRealtime;
    options.now = now;
    options.timeouts = timeouts;
    options.max_bad_line_ratio = max_bad_line_ratio;
    options.force = force;
    return Report(clickatron::rebuild::LoadHistory(*cluster, options));
  }
  if (restate->parsed()) {
    restate_options.format = restate_format == "archive" ? clickatron::rebuild::InputFormat::kArchive
                                                         : clickatron::rebuild::InputFormat::kRealtime;
    restate_options.http_timeout_ms = timeouts.http_ms;
    return Report(clickatron::rebuild::Restate(*cluster, restate_options, restate_now, timeouts));
  }
  auto report = clickatron::rebuild::StatusReport(*cluster);
  if (!report.ok()) return Report(report.status());
  std::fputs(report->c_str(), stdout);
  return 0;
}

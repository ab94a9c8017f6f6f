// clickatron-rebuild: the nightly archive build, and the door for history.
//
//   clickatron-rebuild run    --config FILE --date YYYY-MM-DD [--force]
//   clickatron-rebuild load   --config FILE [--format realtime|archive] [--now] [--force] DATAFILE…
//   clickatron-rebuild restate --config FILE --ns NS --from DAY --to DAY [--keys-in-file] [--now] DATAFILE…
//   clickatron-rebuild status --config FILE
//   clickatron-rebuild task   --config FILE --dir TASK_DIR   (what an engine runs on a host)
#include <cstdio>
#include <optional>

#include <spdlog/spdlog.h>

#include "clickatron/command_line.h"
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
  clickatron::CommandLine app{"clickatron-rebuild: export, sort, merge and deploy the archive; load history"};
  app.RequireCommand();
  std::string config_path;
  std::string date;
  bool force = false;
  std::string format = "realtime";
  bool now = false;
  std::vector<std::string> files;
  int export_timeout_s = 6 * 3600;
  int transfer_timeout_s = 6 * 3600;

  clickatron::Command run =
      app.AddCommand("run", "fold one day (yesterday) into a new archive generation and deploy it");
  run.Option("--config", config_path, "cluster file").Required();
  run.Option("--date", date, "the day to fold, YYYY-MM-DD (UTC)").Required();
  run.Flag("--force", force, "fold the day even if the archive's last_day already reaches it");
  bool build_only = false;
  run.Flag("--build-only", build_only, "build the generation and stop before deploying it (the next run deploys it)");
  run.Option("--export-timeout", export_timeout_s, "seconds one realtime export may take");
  run.Option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
             "seconds an archive replica may take to fetch and load its file (and the rebuild to fetch "
             "a generation it does not have)");

  clickatron::Command load =
      app.AddCommand("load", "queue historical data for the next generation (or deploy it --now)");
  load.Option("--config", config_path, "cluster file").Required();
  load.Option("--format", format, "format of the data files").OneOf({"realtime", "archive"});
  load.Flag("--now", now, "build and deploy a generation with this data at once");
  load.Flag("--force", force,
            "load files even though an earlier load has the same content (it would be counted twice)");
  load.Option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
              "seconds an archive replica may take to fetch and load its file (and the rebuild to fetch "
              "a generation it does not have)");
  std::optional<double> max_bad_line_ratio;
  load.Option("--max-bad-line-ratio", max_bad_line_ratio,
              "for this load only: the share of bad lines (0..1) above which it fails and queues nothing "
              "(default: [rebuild] max_bad_line_ratio)")
      .Range(0.0, 1.0);
  load.Option("files", files, "data files (plain or gzip)").Required();

  clickatron::rebuild::RestateOptions restate_options;
  bool restate_now = false;
  std::string restate_format = "realtime";
  clickatron::Command restate = app.AddCommand(
      "restate",
      "replace a namespace's closed days with what the files say (deployed by the next generation, or --now)");
  restate.Option("--config", config_path, "cluster file").Required();
  restate.Option("--ns", restate_options.ns, "the namespace restated").Required();
  restate.Option("--from", restate_options.from_day, "the first day restated, YYYY-MM-DD (UTC)").Required();
  restate.Option("--to", restate_options.to_day, "the last day restated, YYYY-MM-DD (UTC), inclusive").Required();
  restate.Flag("--keys-in-file", restate_options.keys_in_file,
               "replace only the keys that appear in the files (every other key of the namespace is untouched)");
  restate.Flag("--now", restate_now, "build and deploy a generation with the restatement at once");
  restate.Option("--format", restate_format, "format of the data files").OneOf({"realtime", "archive"});
  restate.Option("--max-bad-line-ratio", restate_options.max_bad_line_ratio,
                 "the share of bad lines (0..1) above which it fails and queues nothing")
      .Range(0.0, 1.0);
  restate.Option("--transfer-timeout,--reload-timeout", transfer_timeout_s,
                 "seconds an archive replica may take to fetch and load its file");
  restate.Option("files", restate_options.files, "the authoritative data files (plain or gzip)").Required();

  clickatron::Command status = app.AddCommand("status", "which steps are done per day; the serving generation");
  status.Option("--config", config_path, "cluster file").Required();

  std::string task_dir;
  clickatron::Command task = app.AddCommand(
      "task", "run one rebuild task from its directory (TASK/in/task.json); engines run this on their hosts");
  task.Option("--config", config_path, "cluster file").Required();
  task.Option("--dir", task_dir, "the task's directory").Required();

  if (const std::optional<int> code = app.Parse(argc, argv)) return *code;

  auto cluster = clickatron::ClusterConfig::Load(config_path);
  if (!cluster.ok()) return Report(cluster.status());
  clickatron::InitLogging("clickatron-rebuild", "rebuild", cluster->log_level);
  g_logging = true;

  clickatron::rebuild::Timeouts timeouts;
  timeouts.export_ms = export_timeout_s * 1000;
  timeouts.transfer_ms = transfer_timeout_s * 1000;
  if (run.Parsed()) {
    return Report(clickatron::rebuild::RunDay(*cluster, {date, force, build_only, timeouts}));
  }
  if (task.Parsed()) {
    clickatron::rebuild::TaskResources resources;
    resources.threads = cluster->rebuild.threads;
    resources.memory_bytes = cluster->rebuild.memory_mb << 20;
    return Report(clickatron::rebuild::RunTaskDir({task_dir}, *cluster, resources));
  }
  if (load.Parsed()) {
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
  if (restate.Parsed()) {
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

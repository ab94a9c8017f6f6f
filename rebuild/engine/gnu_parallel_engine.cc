#include "gnu_parallel_engine.h"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/subprocess.h"

namespace clickatron::rebuild {
namespace {

// One word for the remote shell, whatever it holds.
std::string ShellQuote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace

std::vector<std::string> GnuParallelEngine::CommandLine(const std::string& parent, const std::string& stage) const {
  const RebuildConfig& rb = cluster_.rebuild;
  std::vector<std::string> argv = {"parallel", "--will-cite", "--ssh", rb.engine_ssh};
  for (const std::string& host : rb.engine_hosts) {
    argv.push_back("--sshlogin");
    argv.push_back(host);
  }
  const std::vector<std::string> rest = {
      "--workdir", "...",                  // a fresh directory per task on the host, removed after
      "--transferfile", "{}/in",           // the task's inputs go with it
      "--return", "{}/out",                // and its results come back
      "--cleanup",
      "--retries", std::to_string(rb.engine_retries),
      "--joblog", fmt::format("{}/joblog-{}.txt", parent, stage),
      "--tagstring", "{}",
      "--line-buffer",
      fmt::format("{} task --config {} --dir {{}}", ShellQuote(rb.engine_command), ShellQuote(config_path_))};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

Status GnuParallelEngine::Run(const std::string& stage, const std::vector<TaskPaths>& tasks, Progress* /*progress*/) {
  std::vector<std::string> todo;
  std::string parent;
  for (const TaskPaths& task : tasks) {
    const std::filesystem::path path(task.dir);
    if (parent.empty()) parent = path.parent_path().string();
    if (path.parent_path().string() != parent) {
      return Status::InvalidArgument(fmt::format("{}: tasks in {} and {}", stage, parent, path.parent_path().string()));
    }
    if (!TaskDone(task)) todo.push_back(path.filename().string());
  }
  if (todo.empty()) return Status::Ok();
  std::string names;
  for (const std::string& name : todo) names += name + "\n";
  const std::vector<std::string> argv = CommandLine(parent, stage);
  spdlog::info("{}: {} tasks on {} host(s) with GNU parallel", stage, todo.size(), cluster_.rebuild.engine_hosts.size());
  auto ran = RunProcess(argv, parent, names);
  if (!ran.ok()) {
    if (ran.status().code() == StatusCode::kNotFound) {
      return Status::FailedPrecondition(
          "[rebuild] engine = \"gnu-parallel\" but GNU parallel is not installed here (apt-get install parallel)",
          "ENGINE_UNAVAILABLE");
    }
    return ran.status();
  }
  std::vector<std::string> left;
  for (const std::string& name : todo) {
    if (!TaskDone(TaskPaths{parent + "/" + name})) left.push_back(name);
  }
  if (!left.empty()) {
    // parallel itself content (its tasks exited 0) while their results are
    // not here: what failed is bringing them back (rsync), most often this
    // host's disk being full, not the tasks (probe 10b: the message sent
    // the operator to a job log of successes).
    const std::string cause =
        ran->ok() ? fmt::format(" GNU parallel says the tasks ended well, so their results did not come back to "
                                "{}: see rsync's errors above (this host's free space in the work dir first)",
                                parent)
                  : std::string();
    return Status::Unavailable(
        fmt::format("{}: {} did not finish on the engine after {} attempt(s) each (GNU parallel: {}; its job log: "
                    "{}/joblog-{}.txt).{} Finished tasks are kept; a rerun runs only these",
                    stage, DescribeTaskList(left), cluster_.rebuild.engine_retries, ran->Describe(), parent, stage,
                    cause),
        "TASKS_FAILED");
  }
  if (!ran->ok()) spdlog::warn("{}: GNU parallel ended with {}, but every task is done", stage, ran->Describe());
  return Status::Ok();
}

}  // namespace clickatron::rebuild

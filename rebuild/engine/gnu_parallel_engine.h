// The gnu-parallel engine: one `parallel` command per stage, over ssh.
//
//   cd PARENT && parallel --ssh ENGINE_SSH --sshlogin HOST… --workdir ...
//       --transferfile {}/in --return {}/out --cleanup --retries N
//       --joblog PARENT/joblog-STAGE.txt --tagstring {}
//       'ENGINE_COMMAND task --config CONFIG --dir {}'  <<< task names
//
// parallel copies a task's in/ to a fresh directory on a host (rsync over
// ssh), runs the task there, copies its out/ back and removes the remote
// copy. A task that exits non-zero or whose ssh session dies (a killed
// process, a host gone) is run again, on another host when there is one.
// The rebuild then checks each task's out/done.json itself.
#pragma once

#include "engine.h"

namespace clickatron::rebuild {

class GnuParallelEngine : public Engine {
 public:
  explicit GnuParallelEngine(const ClusterConfig& cluster, std::string config_path)
      : cluster_(cluster), config_path_(std::move(config_path)) {}
  std::string name() const override { return "gnu-parallel"; }
  bool ships_inputs() const override { return true; }
  Status Run(const std::string& stage, const std::vector<TaskPaths>& tasks, Progress* progress) override;

  // The parallel command line for tasks under `parent` (for tests and logs).
  std::vector<std::string> CommandLine(const std::string& parent, const std::string& stage) const;

 private:
  const ClusterConfig& cluster_;
  std::string config_path_;  // absolute: the same path on every engine host
};

}  // namespace clickatron::rebuild

// The local engine: tasks run in this process, at most [rebuild] threads at
// once, each with its share of the threads and of memory_mb.
#pragma once

#include "engine.h"

namespace clickatron::rebuild {

class LocalEngine : public Engine {
 public:
  explicit LocalEngine(const ClusterConfig& cluster) : cluster_(cluster) {}
  std::string name() const override { return "local"; }
  bool ships_inputs() const override { return false; }
  Status Run(const std::string& stage, const std::vector<TaskPaths>& tasks, Progress* progress) override;

 private:
  const ClusterConfig& cluster_;
};

}  // namespace clickatron::rebuild

#include "engine.h"

#include <filesystem>

#include <fmt/format.h>

#include "gnu_parallel_engine.h"
#include "local_engine.h"

namespace clickatron::rebuild {

Result<std::unique_ptr<Engine>> MakeEngine(const ClusterConfig& cluster) {
  if (cluster.rebuild.engine == "local") return std::unique_ptr<Engine>(new LocalEngine(cluster));
  if (cluster.rebuild.engine == "gnu-parallel") {
    std::error_code ec;
    const std::string config = std::filesystem::absolute(cluster.path, ec).lexically_normal().string();
    if (ec) return Status::IoError(fmt::format("absolute path of {}: {}", cluster.path, ec.message()));
    return std::unique_ptr<Engine>(new GnuParallelEngine(cluster, config));
  }
  return Status::InvalidArgument(fmt::format("[rebuild] engine \"{}\" is unknown", cluster.rebuild.engine),
                                 "BAD_CONFIG");
}

std::string DescribeTaskList(const std::vector<std::string>& names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " and " : ", ";
    list += names[i];
  }
  return fmt::format("{} {}", names.size() == 1 ? "task" : "tasks", list);
}

}  // namespace clickatron::rebuild

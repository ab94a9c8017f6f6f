#include "load_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/gzip_file.h"
#include "clickatron/sha256.h"
#include "clickatron/unique_fd.h"

namespace clickatron::rebuild {
namespace {

constexpr const char* kAlreadyLoaded = "ALREADY_LOADED";

// The first two bytes (gzip's magic) and the last byte of a file.
Status CheckEnding(const std::string& path, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
  char head[2] = {0, 0};
  char last = 0;
  if (::pread(fd.get(), head, sizeof head, 0) < 0 ||
      ::pread(fd.get(), &last, 1, static_cast<off_t>(bytes - 1)) != 1) {
    return Status::IoError(fmt::format("read {}: {}", path, std::strerror(errno)));
  }
  if (bytes >= 2 && LooksLikeGzip(std::string_view(head, 2))) return Status::Ok();
  if (last != '\n') {
    return Status::FailedPrecondition(
        fmt::format("{} does not end with a newline, so it looks cut short: its last line could load a wrong "
                    "count. Nothing was loaded. If the file is whole, add the newline (echo >> {}) and load it",
                    path, path),
        "CUT_FILE");
  }
  return Status::Ok();
}

std::string Describe(const PriorLoad& load) {
  std::string state = load.folded_into ? fmt::format("folded into generation {}", *load.folded_into)
                                       : std::string("queued, not yet folded");
  return fmt::format("load {} (queued {}, {})", load.id, load.created, state);
}

}  // namespace

Result<std::vector<LoadInput>> IdentifyLoadInputs(const std::vector<std::string>& files) {
  std::vector<LoadInput> inputs;
  std::map<std::string, std::string> file_of_digest;
  for (const std::string& file : files) {
    LoadInput input;
    input.file = file;
    input.bytes = FileSizeOrZero(file);
    CLICKATRON_RETURN_IF_ERROR(CheckEnding(file, input.bytes));
    Result<std::string> digest = Sha256OfFile(file);
    if (!digest.ok()) return digest.status();
    input.sha256 = std::move(digest).value();
    auto [it, fresh] = file_of_digest.emplace(input.sha256, file);
    if (!fresh) {
      return Status::FailedPrecondition(
          fmt::format("{} and {} have the same content (sha256 {}): it would be counted twice", it->second, file,
                      input.sha256),
          kAlreadyLoaded);
    }
    inputs.push_back(std::move(input));
  }
  return inputs;
}

nlohmann::json LoadInputsJson(const std::vector<LoadInput>& inputs) {
  nlohmann::json out = nlohmann::json::array();
  for (const LoadInput& in : inputs) {
    out.push_back({{"file", in.file}, {"bytes", in.bytes}, {"sha256", in.sha256}});
  }
  return out;
}

Result<std::vector<PriorLoad>> ReadPriorLoads(const WorkDir& work) {
  std::vector<PriorLoad> loads;
  std::error_code ec;
  if (!std::filesystem::exists(work.QueueRoot(), ec)) return loads;
  for (const auto& entry : std::filesystem::directory_iterator(work.QueueRoot(), ec)) {
    if (!entry.is_directory()) continue;
    const std::string id = entry.path().filename().string();
    if (!FileExists(work.QueueDone(id))) continue;  // failed or unfinished: never folded
    Result<std::string> text = ReadFileToString(work.QueueDone(id));
    if (!text.ok()) return text.status();
    auto marker = nlohmann::json::parse(*text, nullptr, false);
    if (!marker.is_object()) return Status::Corruption(fmt::format("{} is not a JSON object", work.QueueDone(id)));
    PriorLoad load;
    load.id = id;
    load.created = marker.value("created", "");
    for (const auto& in : marker.value("inputs", nlohmann::json::array())) {
      load.inputs.push_back({in.value("file", ""), in.value("bytes", uint64_t{0}), in.value("sha256", "")});
    }
    if (FileExists(work.QueueFolded(id))) {
      Result<std::string> folded = ReadFileToString(work.QueueFolded(id));
      if (!folded.ok()) return folded.status();
      auto f = nlohmann::json::parse(*folded, nullptr, false);
      load.folded_into = f.is_object() ? f.value("generation", int64_t{0}) : int64_t{0};
    }
    loads.push_back(std::move(load));
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", work.QueueRoot(), ec.message()));
  std::sort(loads.begin(), loads.end(), [](const PriorLoad& a, const PriorLoad& b) { return a.id < b.id; });
  return loads;
}

Result<std::optional<std::string>> MatchPriorLoads(const std::vector<LoadInput>& inputs,
                                                    const std::vector<PriorLoad>& prior) {
  const auto digests = [](const std::vector<LoadInput>& in) {
    std::vector<std::string> d;
    for (const LoadInput& i : in) d.push_back(i.sha256);
    std::sort(d.begin(), d.end());
    return d;
  };
  const std::vector<std::string> mine = digests(inputs);
  for (const PriorLoad& load : prior) {
    if (!load.folded_into && !load.inputs.empty() && digests(load.inputs) == mine) return {load.id};
  }
  for (const LoadInput& in : inputs) {
    for (const PriorLoad& load : prior) {
      for (const LoadInput& had : load.inputs) {
        if (had.sha256 != in.sha256) continue;
        return Status::FailedPrecondition(
            fmt::format("{} has the content (sha256 {}) of {} in {}: loading it again would count it twice. "
                        "Nothing was loaded; --force loads it anyway",
                        in.file, in.sha256, had.file, Describe(load)),
            kAlreadyLoaded);
      }
    }
  }
  return std::optional<std::string>();
}

}  // namespace clickatron::rebuild

#include "load_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
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

struct CheckedFile {
  uint64_t bytes = 0;
  bool gzip = false;
};

// A regular file (its size, and whether it is gzip: its first two bytes),
// whose last byte is a newline unless it is gzip or empty.
Result<CheckedFile> CheckFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO must not block the open
  if (!fd.valid()) return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::IoError(fmt::format("stat {}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("{} is not a regular file (a pipe or a device?): a load reads its input twice, for its "
                    "digest and for its lines. Write the data to a file and load that",
                    path),
        "NOT_A_FILE");
  }
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes == 0) return CheckedFile{};
  char head[2] = {0, 0};
  char last = 0;
  if (::pread(fd.get(), head, sizeof head, 0) < 0 ||
      ::pread(fd.get(), &last, 1, static_cast<off_t>(bytes - 1)) != 1) {
    return Status::IoError(fmt::format("read {}: {}", path, std::strerror(errno)));
  }
  if (bytes >= 2 && LooksLikeGzip(std::string_view(head, 2))) return CheckedFile{bytes, true};
  if (last != '\n') {
    return Status::FailedPrecondition(
        fmt::format("{} does not end with a newline, so it looks cut short: its last line could load a wrong "
                    "count. Nothing was loaded. If the file is whole, add the newline (echo >> {}) and load it",
                    path, path),
        "CUT_FILE");
  }
  return CheckedFile{bytes, false};
}

// The digest of the lines a file holds: a gzip file's decompressed (the
// same data compressed twice is other bytes, gzip stamps its header with the
// time, yet it would count twice), any other file's bytes.
Result<std::string> ContentDigest(const std::string& path, bool gzip) {
  if (!gzip) return Sha256OfFile(path);
  Result<GzipReader> reader = GzipReader::Open(path);
  if (!reader.ok()) return reader.status();
  return Sha256OfStream([&](char* out, size_t n) { return reader->Read(out, n); });
}

// A string member, or "" (a marker edited by hand is not a reason to throw).
std::string StringField(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string Describe(const PriorLoad& load) {
  std::string state = load.folded_into ? fmt::format("folded into generation {}", *load.folded_into)
                                       : std::string("queued, not yet folded");
  return fmt::format("load {} (queued {}, {})", load.id, load.created, state);
}

}  // namespace

Result<std::vector<LoadInput>> IdentifyLoadInputs(const std::vector<std::string>& files, bool force) {
  std::vector<LoadInput> inputs;
  std::map<std::string, std::string> file_of_digest;
  for (const std::string& file : files) {
    LoadInput input;
    input.file = file;
    Result<CheckedFile> checked = CheckFile(file);
    if (!checked.ok()) return checked.status();
    input.bytes = checked->bytes;
    Result<std::string> digest = ContentDigest(file, checked->gzip);
    if (!digest.ok()) return digest.status();
    input.sha256 = std::move(digest).value();
    auto [it, fresh] = file_of_digest.emplace(input.sha256, file);
    if (!fresh && !force && input.bytes > 0) {
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
    load.created = StringField(marker, "created");
    load.format = StringField(marker, "format");
    const auto inputs = marker.find("inputs");
    if (inputs != marker.end() && inputs->is_array()) {
      for (const auto& in : *inputs) {
        if (!in.is_object()) continue;
        const auto bytes = in.find("bytes");
        load.inputs.push_back({StringField(in, "file"),
                               bytes != in.end() && bytes->is_number_unsigned() ? bytes->get<uint64_t>() : 0,
                               StringField(in, "sha256")});
      }
    }
    if (FileExists(work.QueueFolded(id))) {
      Result<std::string> folded = ReadFileToString(work.QueueFolded(id));
      if (!folded.ok()) return folded.status();
      auto f = nlohmann::json::parse(*folded, nullptr, false);
      const bool has_generation = f.is_object() && f.contains("generation") && f["generation"].is_number_integer();
      load.folded_into = has_generation ? f["generation"].get<int64_t>() : int64_t{0};
    }
    loads.push_back(std::move(load));
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", work.QueueRoot(), ec.message()));
  std::sort(loads.begin(), loads.end(), [](const PriorLoad& a, const PriorLoad& b) { return a.id < b.id; });
  return loads;
}

Result<std::optional<std::string>> MatchPriorLoads(const std::vector<LoadInput>& inputs, const std::string& format,
                                                    const std::vector<PriorLoad>& prior, bool force) {
  const auto digests = [](const std::vector<LoadInput>& in) {
    std::vector<std::string> d;
    for (const LoadInput& i : in) d.push_back(i.sha256);
    std::sort(d.begin(), d.end());
    return d;
  };
  const std::vector<std::string> mine = digests(inputs);
  for (const PriorLoad& load : prior) {
    if (!load.folded_into && load.format == format && !load.inputs.empty() && digests(load.inputs) == mine) {
      return {load.id};
    }
  }
  if (force) return std::optional<std::string>();
  for (const LoadInput& in : inputs) {
    if (in.bytes == 0) continue;  // adds nothing, whatever loaded it before
    for (const PriorLoad& load : prior) {
      for (const LoadInput& had : load.inputs) {
        if (had.sha256 != in.sha256) continue;
        return Status::FailedPrecondition(
            fmt::format("{} has the content (sha256 {}) of {} in {}, loaded as {}: loading it again would count "
                        "it twice. Nothing was loaded; --force loads it anyway",
                        in.file, in.sha256, had.file, Describe(load), load.format),
            kAlreadyLoaded);
      }
    }
  }
  return std::optional<std::string>();
}

}  // namespace clickatron::rebuild

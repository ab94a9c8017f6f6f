#include "late_inputs.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/fetch_to_file.h"
#include "clickatron/file_util.h"
#include "clickatron/framed_log.h"
#include "clickatron/http_client.h"
#include "clickatron/key_codec.h"
#include "clickatron/oplog_record.h"

namespace clickatron::rebuild {
namespace {

// A member name that can name a directory of the work dir and the first part
// of an id.
bool UsableMemberName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// GET /late/files of one member: name and bytes of each sealed file.
Result<std::vector<std::pair<std::string, uint64_t>>> ListMember(BlockingHttpClient& client,
                                                                 const ClusterConfig& cluster,
                                                                 const MemberConfig& member, int timeout_ms) {
  HttpRequestSpec spec;
  spec.target = "/late/files";
  spec.bearer_token = cluster.admin_token;
  spec.timeout_ms = timeout_ms;
  HttpResponse r = client.Fetch(member.listen, spec);
  if (!r.ok() || r.status_code != 200) {
    return Status::Unavailable(fmt::format("GET /late/files: {}", DescribeHttpAnswer(r)));
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j["data"].is_object() || !j["data"]["files"].is_array()) {
    return Status::Corruption("GET /late/files: not the expected JSON");
  }
  std::vector<std::pair<std::string, uint64_t>> files;
  for (const nlohmann::json& f : j["data"]["files"]) {
    if (!f.is_object() || !f["name"].is_string() || !f["bytes"].is_number_unsigned()) {
      return Status::Corruption("GET /late/files: an entry without name or bytes");
    }
    const std::string name = f["name"].get<std::string>();
    if (!IsSealedLateFileName(name)) {
      return Status::Corruption(fmt::format("GET /late/files: {} is not a sealed late-data file name",
                                            QuoteForMessage(name)));
    }
    files.emplace_back(name, f["bytes"].get<uint64_t>());
  }
  return files;
}

// Every whole frame of `path` reads back with a good checksum, and the file
// ends on a frame boundary.
Status CheckFramedLog(const std::string& path) {
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  uint64_t frames = 0;
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    ++frames;
  }
  if ((*reader)->truncated_tail()) {
    return Status::Corruption(fmt::format("{} ends inside a frame (after {} whole frames, {} bytes)", path, frames,
                                          (*reader)->good_bytes()));
  }
  return Status::Ok();
}

// GET /late/file into `path` (via path.tmp, fsynced, renamed). UNAVAILABLE
// when the transfer failed or came short (the member is skipped this run);
// CORRUPTION when the listed bytes came whole but are not a framed log.
Status FetchOne(BlockingHttpClient& client, const ClusterConfig& cluster, const MemberConfig& member,
                const std::string& name, uint64_t bytes, const std::string& path, int timeout_ms) {
  HttpRequestSpec spec;
  spec.target = "/late/file?name=" + name;
  spec.bearer_token = cluster.admin_token;
  spec.timeout_ms = timeout_ms;
  FetchToFileOptions options;
  options.temp_suffix = ".tmp";
  options.check = [&](const HttpResponse&, const std::string& tmp, uint64_t received) -> Status {
    if (received != bytes) {
      return Status::Unavailable(
          fmt::format("GET /late/file {}: {} bytes arrived, /late/files listed {} (the transfer broke off)", name,
                      received, bytes));
    }
    if (Status st = CheckFramedLog(tmp); !st.ok()) {
      return Status::Corruption(fmt::format("late-data file {} of {} arrived whole ({} bytes) but is damaged: {}",
                                            name, member.name, bytes, st.message()));
    }
    return Status::Ok();
  };
  return FetchToFile(client, member.listen, std::move(spec), path, "GET /late/file " + name, options).status();
}

}  // namespace

std::string LateInputId(const std::string& member, const std::string& name) { return member + "/" + name; }

bool SplitLateInputId(const std::string& id, std::string* member, std::string* name) {
  const size_t slash = id.find('/');
  if (slash == std::string::npos) return false;
  std::string m = id.substr(0, slash), n = id.substr(slash + 1);
  if (!UsableMemberName(m) || !IsSealedLateFileName(n)) return false;
  *member = std::move(m);
  *name = std::move(n);
  return true;
}

std::string NormalizeLateInputId(const ClusterConfig& cluster, const std::string& entry) {
  std::string member, name;
  if (SplitLateInputId(entry, &member, &name)) return entry;
  const std::string base = std::filesystem::path(entry).filename().string();
  const std::string dir = DirName(entry);  // …/late
  if (!IsSealedLateFileName(base)) return entry;
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    std::error_code ec;
    const auto a = std::filesystem::weakly_canonical(api->data_dir + "/late", ec);
    const auto b = std::filesystem::weakly_canonical(dir, ec);
    if (!ec && a == b && UsableMemberName(api->name)) return LateInputId(api->name, base);
  }
  return entry;
}

Result<FetchedLateInputs> FetchLateInputs(const FetchLateOptions& options) {
  const ClusterConfig& cluster = *options.cluster;
  FetchedLateInputs out;
  BlockingHttpClient client(cluster);
  std::vector<std::tuple<int64_t, std::string, std::string>> fetched;  // created, id, path
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    if (!UsableMemberName(api->name)) {
      return Status::InvalidArgument(
          fmt::format("API member \"{}\": a name with '/' cannot name its late-data files", api->name));
    }
    auto listing = ListMember(client, cluster, *api, options.http_timeout_ms);
    if (!listing.ok()) {
      out.skipped_members.emplace_back(api->name, listing.status().message());
      continue;
    }
    for (const auto& [name, bytes] : *listing) {
      const std::string id = LateInputId(api->name, name);
      if (options.already_folded.count(id) > 0) {
        out.still_sealed.push_back(id);  // folded; its /late/done is still to come
        continue;
      }
      const std::string dir = options.dest_dir + "/" + api->name;
      CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
      const std::string path = dir + "/" + name;
      const Status st = FetchOne(client, cluster, *api, name, bytes, path, options.transfer_timeout_ms);
      if (st.code() == StatusCode::kUnavailable) {
        // Its other files wait too: they are all fetched by a later run.
        out.skipped_members.emplace_back(api->name, st.message());
        break;
      }
      if (!st.ok()) return st.WithContext(fmt::format("late data of {}", api->name));
      int64_t created = 0;
      bool sealed = false;
      (void)ParseLateFileName(name, &created, &sealed);
      fetched.emplace_back(created, id, path);
    }
  }
  std::sort(fetched.begin(), fetched.end());
  for (auto& [created, id, path] : fetched) {
    out.ids.push_back(std::move(id));
    out.paths.push_back(std::move(path));
  }
  for (const auto& [member, why] : out.skipped_members) {
    spdlog::warn("late data: API member {} skipped this run ({}); its sealed files stay there for the next run",
                 member, why);
  }
  return out;
}

Status MarkLateInputDone(const ClusterConfig& cluster, const std::string& id, int timeout_ms) {
  std::string member_name, name;
  if (!SplitLateInputId(NormalizeLateInputId(cluster, id), &member_name, &name)) {
    return Status::InvalidArgument(fmt::format(
        "late input {} names no API member of {} (mark it done by hand with POST /late/done on its API node, "
        "then rerun)",
        QuoteForMessage(id), cluster.path));
  }
  const MemberConfig* member = cluster.FindMember(member_name);
  if (member == nullptr || member->role != MemberRole::kApi) {
    return Status::InvalidArgument(
        fmt::format("late input {}: {} is not an API member of {}", id, member_name, cluster.path));
  }
  BlockingHttpClient client(cluster);
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.target = "/late/done?name=" + name;
  spec.bearer_token = cluster.admin_token;
  spec.timeout_ms = timeout_ms;
  HttpResponse r = client.Fetch(member->listen, spec);
  if (!r.ok() || r.status_code != 200) {
    return Status::Unavailable(
        fmt::format("POST /late/done?name={} on {}: {}", name, member_name, DescribeHttpAnswer(r)), "LATE_DONE_FAILED");
  }
  return Status::Ok();
}

std::vector<LateListing> ListLateFiles(const ClusterConfig& cluster, int timeout_ms) {
  std::vector<LateListing> out;
  BlockingHttpClient client(cluster);
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    LateListing listing;
    listing.member = api->name;
    auto files = ListMember(client, cluster, *api, timeout_ms);
    if (files.ok()) {
      listing.files = std::move(files).value();
    } else {
      listing.status = files.status();
    }
    out.push_back(std::move(listing));
  }
  return out;
}

Result<std::map<std::string, std::set<std::string>>> SealAndListLateFiles(const ClusterConfig& cluster,
                                                                           int timeout_ms) {
  std::map<std::string, std::set<std::string>> sealed;
  BlockingHttpClient client(cluster);
  for (const MemberConfig* api : cluster.MembersWithRole(MemberRole::kApi)) {
    HttpRequestSpec seal;
    seal.method = "POST";
    seal.target = "/late/seal";
    seal.bearer_token = cluster.admin_token;
    seal.timeout_ms = timeout_ms;
    HttpResponse r = client.Fetch(api->listen, seal);
    if (!r.ok() || r.status_code != 200) {
      return Status::Unavailable(fmt::format("API member {}: POST /late/seal: {}", api->name, DescribeHttpAnswer(r)));
    }
    auto files = ListMember(client, cluster, *api, timeout_ms);
    if (!files.ok()) return files.status().WithContext(fmt::format("API member {}", api->name));
    std::set<std::string>& names = sealed[api->name];
    for (const auto& [name, bytes] : *files) names.insert(name);
  }
  return sealed;
}

}  // namespace clickatron::rebuild

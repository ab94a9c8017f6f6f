#include "deploy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/key_codec.h"
#include "clickatron/unique_fd.h"

namespace clickatron::rebuild {
namespace {

Status Errno(std::string_view what, const std::string& path) {
  return Status::IoError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

std::string Describe(const MemberConfig& member) {
  return fmt::format("{} ({})", member.name, member.listen.ToString());
}

// data.generation of an envelope, or -1.
int64_t GenerationIn(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_object()) return -1;
  const nlohmann::json& data = j["data"];
  if (!data.contains("generation") || !data["generation"].is_number_unsigned()) return -1;
  return data["generation"].get<int64_t>();
}

std::string BodyText(const HttpResponse& r) {
  if (!r.ok()) return r.transport.message();
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return fmt::format("HTTP {} {}: {}", r.status_code, j.value("status_txt", ""), j["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", r.status_code, QuoteForMessage(r.body.substr(0, 300)));
}

Status CopyFile(const std::string& from, const std::string& to) {
  const UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return Errno("open", from);
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return Errno("create", to);
  constexpr size_t kBlock = 4u << 20;
  std::unique_ptr<char[]> block(new char[kBlock]);
  Status st;
  while (st.ok()) {
    const ssize_t n = ::read(in.get(), block.get(), kBlock);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Errno("read", from);
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n && st.ok();) {
      const ssize_t w = ::write(out.get(), block.get() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) st = Errno("write", to);
      else done += w;
    }
  }
  if (st.ok() && ::fsync(out.get()) != 0) st = Errno("fsync", to);
  // The copy is served as the shard's file: a close error fails it too.
  if (Status closed = out.Close(); st.ok() && !closed.ok()) st = closed.WithContext(to);
  return st;
}

// `to` becomes another name of `from` (same file system) or a copy of it.
Status LinkOrCopy(const std::string& from, const std::string& to) {
  ::unlink(to.c_str());
  if (::link(from.c_str(), to.c_str()) == 0) return Status::Ok();
  return CopyFile(from, to);
}

// One serving path of a shard (replicas on this host may share it).
struct Target {
  std::string file;
  bool staged = false;    // we renamed new files into place
  bool had_prev = false;  // FILE.prev / FILE.manifest.prev hold what served before
};

Status Stage(const std::string& built, const Manifest& manifest, Target* target) {
  const std::string& file = target->file;
  const std::string manifest_path = ManifestPathFor(file);
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(file)));
  // FILE.new + FILE.manifest.new, durable before anything is renamed.
  CLICKATRON_RETURN_IF_ERROR(LinkOrCopy(built, file + ".new"));
  CLICKATRON_RETURN_IF_ERROR(FsyncFile(file + ".new"));
  CLICKATRON_RETURN_IF_ERROR(WriteManifestAtomically(manifest_path + ".new", manifest));
  // Keep what serves now, to put it back if a replica refuses the new file.
  target->had_prev = FileExists(file) && FileExists(manifest_path);
  if (target->had_prev) {
    CLICKATRON_RETURN_IF_ERROR(LinkOrCopy(file, file + ".prev"));
    CLICKATRON_RETURN_IF_ERROR(LinkOrCopy(manifest_path, manifest_path + ".prev"));
  }
  target->staged = true;
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(manifest_path + ".new", manifest_path));
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(file + ".new", file));
  return Status::Ok();
}

void RollBack(const Target& target) {
  if (!target.staged) return;
  const std::string manifest_path = ManifestPathFor(target.file);
  if (target.had_prev) {
    if (Status st = RenameDurably(manifest_path + ".prev", manifest_path); !st.ok()) {
      spdlog::error("rollback of {}: {}", manifest_path, st.ToString());
    }
    if (Status st = RenameDurably(target.file + ".prev", target.file); !st.ok()) {
      spdlog::error("rollback of {}: {}", target.file, st.ToString());
    }
  } else {
    // The shard had no file before: there is nothing to put back.
    ::unlink(manifest_path.c_str());
    ::unlink(target.file.c_str());
  }
}

Status ReloadAndVerify(BlockingHttpClient* client, const ClusterConfig& cluster, const MemberConfig& replica,
                       uint64_t generation, const DeployOptions& options) {
  HttpRequestSpec reload;
  reload.method = "POST";
  reload.target = "/reload";
  reload.bearer_token = cluster.admin_token;
  reload.timeout_ms = options.reload_timeout_ms;
  const HttpResponse reloaded = client->Fetch(replica.listen, reload);
  if (!reloaded.ok() || reloaded.status_code != 200) {
    return Status::Unavailable(
        fmt::format("POST /reload on archive replica {}: {}", Describe(replica), BodyText(reloaded)));
  }
  HttpRequestSpec manifest;
  manifest.target = "/manifest";
  manifest.timeout_ms = options.http_timeout_ms;
  const HttpResponse served = client->Fetch(replica.listen, manifest);
  const int64_t serving = served.ok() && served.status_code == 200 ? GenerationIn(served.body) : -1;
  if (serving != static_cast<int64_t>(generation)) {
    return Status::Unavailable(fmt::format("archive replica {} serves generation {} after reload, not {} ({})",
                                           Describe(replica), serving, generation, BodyText(served)));
  }
  return Status::Ok();
}

Status DeployShard(const DeployOptions& options, int shard, BlockingHttpClient* client) {
  const ClusterConfig& cluster = *options.cluster;
  const Manifest& manifest = options.manifests[static_cast<size_t>(shard)];
  const std::vector<const MemberConfig*> replicas = cluster.ArchiveReplicas(shard);
  std::vector<Target> targets;
  std::set<std::string> seen;
  for (const MemberConfig* replica : replicas) {
    if (seen.insert(replica->file).second) targets.push_back({replica->file});
  }
  Status st;
  for (Target& target : targets) {
    // Already in place (a rerun after a crash): only reload and verify.
    auto serving = ReadManifest(ManifestPathFor(target.file));
    if (serving.ok() && serving->generation == manifest.generation && serving->crc32 == manifest.crc32 &&
        serving->bytes == manifest.bytes && FileExists(target.file)) {
      continue;
    }
    st = Stage(options.built_files[static_cast<size_t>(shard)], manifest, &target);
    if (!st.ok()) break;
  }
  if (st.ok()) {
    for (const MemberConfig* replica : replicas) {
      st = ReloadAndVerify(client, cluster, *replica, options.generation, options);
      if (!st.ok()) break;
    }
  }
  if (!st.ok()) {
    spdlog::error("deploy of generation {} to archive shard {} failed: {}; putting the previous files back",
                  options.generation, shard, st.ToString());
    for (const Target& target : targets) RollBack(target);
    for (const MemberConfig* replica : replicas) {
      HttpRequestSpec reload;
      reload.method = "POST";
      reload.target = "/reload";
      reload.bearer_token = cluster.admin_token;
      reload.timeout_ms = options.reload_timeout_ms;
      (void)client->Fetch(replica->listen, reload);  // best effort: a down replica loads the old file on start
    }
    return st.WithContext(fmt::format("archive shard {}", shard));
  }
  for (const Target& target : targets) {
    ::unlink((target.file + ".prev").c_str());
    ::unlink((ManifestPathFor(target.file) + ".prev").c_str());
  }
  spdlog::info("archive shard {}: {} replica(s) serve generation {} ({} records)", shard, replicas.size(),
               options.generation, manifest.records);
  return Status::Ok();
}

}  // namespace

Status CheckArchiveReplicas(const ClusterConfig& cluster, int timeout_ms) {
  BlockingHttpClient client(cluster);
  std::vector<std::string> down;
  for (const MemberConfig* member : cluster.MembersWithRole(MemberRole::kArchive)) {
    HttpRequestSpec request;
    request.target = "/manifest";
    request.timeout_ms = timeout_ms;
    const HttpResponse r = client.Fetch(member->listen, request);
    if (!r.ok() || r.status_code != 200) down.push_back(fmt::format("{}: {}", Describe(*member), BodyText(r)));
  }
  if (down.empty()) return Status::Ok();
  std::string list;
  for (const std::string& d : down) list += (list.empty() ? "" : "; ") + d;
  return Status::Unavailable(
      fmt::format("archive replicas not ready, nothing deployed: {}", list), "REPLICA_UNAVAILABLE");
}

Status DeployGeneration(const DeployOptions& options) {
  CLICKATRON_RETURN_IF_ERROR(CheckArchiveReplicas(*options.cluster, options.http_timeout_ms));
  BlockingHttpClient client(*options.cluster);
  for (int shard = 0; shard < options.cluster->archive_shards; ++shard) {
    CLICKATRON_RETURN_IF_ERROR(DeployShard(options, shard, &client));
  }
  return Status::Ok();
}

Status TellRealtimeExported(const ClusterConfig& cluster, const std::string& date, int timeout_ms) {
  BlockingHttpClient client(cluster);
  for (int shard = 0; shard < cluster.realtime_shards; ++shard) {
    const MemberConfig* member = cluster.RealtimeMember(shard);
    if (member == nullptr) return Status::InvalidArgument(fmt::format("realtime shard {} has no member", shard));
    HttpRequestSpec request;
    request.method = "POST";
    request.target = "/exported?date=" + date;
    request.bearer_token = cluster.admin_token;
    request.timeout_ms = timeout_ms;
    const HttpResponse r = client.Fetch(member->listen, request);
    if (!r.ok() || r.status_code != 200) {
      return Status::Unavailable(
          fmt::format("POST /exported?date={} on realtime {}: {}", date, Describe(*member), BodyText(r)));
    }
  }
  return Status::Ok();
}

}  // namespace clickatron::rebuild

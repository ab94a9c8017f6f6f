#include "publish_server.h"

#include <charconv>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/byte_stream.h"
#include "clickatron/cluster_auth.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/tls.h"

namespace clickatron::rebuild {

Result<std::unique_ptr<PublishServer>> PublishServer::Start(const ClusterConfig& cluster,
                                                            const std::vector<std::string>& files,
                                                            std::vector<Manifest> manifests) {
  const HostPort& address = cluster.rebuild.publish_address;
  if (!IsLoopbackHost(address.host) && cluster.cluster_secret.empty()) {
    return Status::InvalidArgument(
        fmt::format("[rebuild] publish_address {} can be reached from other hosts, and [cluster] "
                    "cluster_secret_file is not set: anyone there could read the archive. Set a cluster secret, "
                    "or publish on 127.0.0.1 (a one-host cluster)",
                    address.ToString()),
        "INSECURE_LISTEN");
  }
  std::unique_ptr<PublishServer> self(new PublishServer());
  for (const std::string& path : files) {
    auto mapping = MappedFile::Open(path);
    if (!mapping.ok()) return mapping.status().WithContext("publishing the generation");
    self->files_.push_back(std::shared_ptr<const MappedFile>(std::move(mapping).value()));
  }
  self->manifests_ = std::move(manifests);
  HttpServerOptions options;
  options.daemon = "clickatron-rebuild";
  options.member = "publish";
  options.listen = address;
  options.limits = cluster.http;
  options.cluster_secret = cluster.cluster_secret;
  options.stop_on_signals = false;  // Ctrl-C stops the rebuild, not just this server
  if (cluster.tls_files().enabled()) {
    auto tls = TlsContext::ForServer(cluster.tls_files());
    if (!tls.ok()) return tls.status().WithContext("publishing the generation over TLS");
    options.tls = std::move(tls).value();
  }
  auto server = HttpServer::Create(std::move(options));
  if (!server.ok()) return server.status().WithContext("[rebuild] publish_address");
  self->server_ = std::move(server).value();
  PublishServer* s = self.get();
  s->server_->InternalRoute("/manifest", [s](const HttpExchangePtr& ex) { s->HandleManifest(ex); }, kGet);
  s->server_->InternalRoute("/file", [s](const HttpExchangePtr& ex) { s->HandleFile(ex); }, kGet | kLongStreams);
  s->loop_ = std::thread([s] {
    if (Status st = s->server_->Run(); !st.ok()) spdlog::error("publish server: {}", st.ToString());
  });
  spdlog::info("publishing generation {} on {}", s->manifests_.empty() ? 0 : s->manifests_.front().generation,
               s->address().ToString());
  return self;
}

PublishServer::~PublishServer() {
  if (server_) server_->Stop();
  if (loop_.joinable()) loop_.join();
}

HostPort PublishServer::address() const { return HostPort{server_->options().listen.host, server_->port()}; }

int PublishServer::ShardOf(const HttpExchangePtr& ex) {
  const std::string* text = ex->args().Get("shard");
  if (text == nullptr) {
    ex->ReplyError(400, "MISSING_ARG_SHARD", "needs shard=S");
    return -1;
  }
  int shard = -1;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), shard);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || shard < 0) {
    ex->ReplyError(400, "INVALID_SHARD", fmt::format("shard must be a shard number, got \"{}\"", *text));
    return -1;
  }
  if (static_cast<size_t>(shard) >= manifests_.size()) {
    ex->ReplyError(404, "NO_SUCH_SHARD", fmt::format("this generation has {} shards", manifests_.size()));
    return -1;
  }
  return shard;
}

void PublishServer::HandleManifest(const HttpExchangePtr& ex) {
  const int shard = ShardOf(ex);
  if (shard < 0) return;
  ex->AddHeader(kArchiveGenerationHeader, std::to_string(manifests_[shard].generation));
  ex->ReplyJson(manifests_[shard].ToJson());
}

void PublishServer::HandleFile(const HttpExchangePtr& ex) {
  const int shard = ShardOf(ex);
  if (shard < 0) return;
  ex->AddHeader(kArchiveGenerationHeader, std::to_string(manifests_[shard].generation));
  const std::shared_ptr<const MappedFile>& file = files_[shard];
  StreamBytes(ex, file, file->data(), {.chunk_bytes = 256 << 10, .content_type = "application/octet-stream"});
}

}  // namespace clickatron::rebuild

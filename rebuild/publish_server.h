// PublishServer: serves a built generation to the archive replicas while the
// rebuild deploys it, so no replica needs a path on the rebuild's host. Each
// replica is told to fetch its shard (POST /fetch?source=ADDRESS) and asks
// (clickatron/generation_fetch.h):
//
//   GET /manifest?shard=S   the shard's manifest
//   GET /file?shard=S       the shard's file, streamed from a read-only mapping
//
// Both are internal routes: signed with the cluster secret when the cluster
// has one, over TLS when the cluster uses it. The server listens on
// [rebuild] publish_address (port 0: a free port, see address()) from
// Start() until it is destroyed, on a thread of its own.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/file_util.h"
#include "clickatron/http_server.h"
#include "clickatron/manifest.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

class PublishServer {
 public:
  // files[i] and manifests[i]: shard i's built file and its manifest.
  static Result<std::unique_ptr<PublishServer>> Start(const ClusterConfig& cluster,
                                                      const std::vector<std::string>& files,
                                                      std::vector<Manifest> manifests);
  ~PublishServer();  // stops serving (streams still running are cut)
  PublishServer(const PublishServer&) = delete;
  PublishServer& operator=(const PublishServer&) = delete;

  // The address replicas are told: publish_address with the bound port.
  HostPort address() const;

 private:
  PublishServer() = default;
  void HandleManifest(const HttpExchangePtr& ex);
  void HandleFile(const HttpExchangePtr& ex);
  // Shard i of shard=i, or -1 after answering 400/404.
  int ShardOf(const HttpExchangePtr& ex);

  std::unique_ptr<HttpServer> server_;
  std::vector<std::shared_ptr<const MappedFile>> files_;
  std::vector<Manifest> manifests_;
  std::thread loop_;
};

}  // namespace clickatron::rebuild

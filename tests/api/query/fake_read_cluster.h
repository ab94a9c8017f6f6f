// A scripted read cluster for unit tests of the read path's clients
// (archive_reader_test.cc, realtime_reader_test.cc, query_gather_test.cc):
// its members in a ClusterConfig, what an archive replica serves, and a
// FakeHttpClient handler that answers /get, /mget and /manifest from it as
// an archive daemon does (archive/archive_server.cc).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/config.h"
#include "clickatron/manifest.h"
#include "clickatron/query_string.h"
#include "testutil/fake_http_client.h"

namespace clickatron::api::fake_read_cluster {

using clickatron::testing::FakeHttpClient;
using Answer = FakeHttpClient::Answer;
using Headers = std::vector<std::pair<std::string, std::string>>;

// The archive replica `replica` of `shard` ("a<shard>r<replica>"), on a port
// of its own: the fake client is keyed by peer, nothing listens there.
inline HostPort ReplicaPeer(int shard, int replica) {
  return HostPort{"127.0.0.1", static_cast<uint16_t>(7100 + 10 * shard + replica)};
}

// A cluster file's worth of ClusterConfig: `shards` archive shards of
// `replicas` replicas each (the reader reads nothing else of it).
inline ClusterConfig ArchiveCluster(int shards, int replicas) {
  ClusterConfig cluster;
  cluster.archive_shards = shards;
  for (int shard = 0; shard < shards; ++shard) {
    for (int replica = 0; replica < replicas; ++replica) {
      MemberConfig member;
      member.name = "a" + std::to_string(shard) + "r" + std::to_string(replica);
      member.role = MemberRole::kArchive;
      member.shard = shard;
      member.listen = ReplicaPeer(shard, replica);
      cluster.members.push_back(member);
    }
  }
  return cluster;
}

// Adds realtime shard `shard`, served by member "r<shard>" at `peer`, to
// `cluster` (a test that reads realtime too).
inline void AddRealtimeShard(ClusterConfig& cluster, int shard, const HostPort& peer) {
  cluster.realtime_shards = std::max(cluster.realtime_shards, shard + 1);
  MemberConfig member;
  member.name = "r" + std::to_string(shard);
  member.role = MemberRole::kRealtime;
  member.shard = shard;
  member.listen = peer;
  cluster.members.push_back(member);
}

// What one archive replica serves: the file's identity (the headers every
// answer carries) and its records. Tests change it in place to deploy
// another generation.
struct ServedFileState {
  uint64_t generation = 7;
  uint32_t crc32 = 1111;
  std::string last_day = "2026-11-30";
  int shard_count = 1;
  std::map<std::string, std::string> records;  // key -> value

  Headers ArchiveHeaders() const {
    return {{"X-Archive-Generation", std::to_string(generation)},
            {"X-Archive-Last-Day", last_day},
            {"X-Archive-Crc32", std::to_string(crc32)},
            {"X-Archive-Shard-Count", std::to_string(shard_count)}};
  }
};

inline std::vector<std::string> KeysOf(const FakeHttpClient::Request& request) {
  QueryArgs args;
  EXPECT_TRUE(ParseQueryString(request.query(), &args).ok()) << request.target;
  std::vector<std::string> keys;
  for (const std::string* key : args.GetAll("key")) keys.push_back(*key);
  return keys;
}

// What an archive daemon answers (archive/archive_server.cc) from `file`:
// /get "value\n" or 404; /mget the "key,value" lines of the hits.
inline Answer AnswerGet(const ServedFileState& file, const FakeHttpClient::Request& request) {
  const std::vector<std::string> keys = KeysOf(request);
  auto it = keys.size() == 1 ? file.records.find(keys[0]) : file.records.end();
  if (it == file.records.end()) return Answer::Http(404, "", file.ArchiveHeaders());
  return Answer::Http(200, it->second + "\n", file.ArchiveHeaders());
}
inline Answer AnswerMget(const ServedFileState& file, const FakeHttpClient::Request& request) {
  std::string body;
  for (const std::string& key : KeysOf(request)) {
    auto it = file.records.find(key);
    if (it != file.records.end()) body += key + "," + it->second + "\n";
  }
  return Answer::Http(200, body, file.ArchiveHeaders());
}

// Makes `peer` answer /get, /mget and /manifest from *file as an archive
// daemon does: /manifest an envelope with a manifest of format 2 naming the
// file. Reads *file when each request is sent.
inline void ServeFile(FakeHttpClient& client, const HostPort& peer, std::shared_ptr<ServedFileState> file) {
  client.Handle(peer, "/get", [file](const FakeHttpClient::Request& request) { return AnswerGet(*file, request); });
  client.Handle(peer, "/mget", [file](const FakeHttpClient::Request& request) { return AnswerMget(*file, request); });
  client.Handle(peer, "/manifest", [file](const FakeHttpClient::Request&) {
    Manifest manifest;  // format 2, as the rebuild writes it
    manifest.generation = file->generation;
    manifest.crc32 = file->crc32;
    manifest.last_day = file->last_day;
    manifest.shard_count = file->shard_count;
    const nlohmann::json envelope = {{"status_code", 200}, {"status_txt", "OK"}, {"data", manifest.ToJson()}};
    return Answer::Http(200, envelope.dump(), file->ArchiveHeaders());
  });
}

}  // namespace clickatron::api::fake_read_cluster

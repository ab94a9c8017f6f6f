// What the damaged-record tests check the same way: a query asked three
// times over an archive record whose text a first read can skip past but a
// whole decode cannot (integration_damaged_*_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/query/cluster_fixture.h"

namespace clickatron::api::testing {

// A figure of the API's /stats data.read (-1, and a failure, when missing).
inline int64_t ReadFigure(const ReadCluster& cluster, const std::string& name) {
  const nlohmann::json stats = cluster.Api("/stats");
  const nlohmann::json& figure = stats["data"]["read"][name];
  EXPECT_TRUE(figure.is_number_integer()) << name << " missing from /stats data.read: " << stats.dump();
  return figure.is_number_integer() ? figure.get<int64_t>() : -1;
}

// Asks `target` three times; each answer's data[field] must be `want`. The
// first read comes from a replica, the second from the read cache (which
// decodes the kept text whole, fails, and must answer as the first read
// did), the third from a replica again (the damaged text forgotten).
inline void ExpectEveryReadAnswersAndTheTextIsForgotten(const ReadCluster& cluster, const std::string& target,
                                                        const std::string& field, const nlohmann::json& want) {
  int64_t hits = ReadFigure(cluster, "archive_cache_hits");
  int64_t requests = ReadFigure(cluster, "archive_requests");
  for (int ask = 1; ask <= 3; ++ask) {
    const nlohmann::json got = cluster.Api(target);
    EXPECT_EQ(got["http_status"], 200) << "ask " << ask << ": " << got.dump();
    EXPECT_EQ(got["data"][field], want) << "ask " << ask << ": " << got.dump();
    const int64_t hits_now = ReadFigure(cluster, "archive_cache_hits");
    const int64_t requests_now = ReadFigure(cluster, "archive_requests");
    if (ask == 2) {
      EXPECT_GT(hits_now, hits) << "the second read did not come from the cache";
    }
    if (ask == 3) {
      EXPECT_GT(requests_now, requests) << "the third read did not ask a replica again";
    }
    hits = hits_now;
    requests = requests_now;
  }
}

}  // namespace clickatron::api::testing

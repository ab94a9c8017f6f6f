// What the damaged-record tests check the same way: a query asked three
// times over an archive record whose text a first read can skip past but a
// whole decode cannot (integration_damaged_*_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/query/cluster_fixture.h"

namespace clickatron::api::testing {

// Asks `target` three times; each answer's data[field] must be `want`. The
// first read comes from a replica, the second from the read cache (which
// decodes the kept text whole, fails, and must answer as the first read
// did: no replica is asked), the third from a replica again (the damaged
// text forgotten).
inline void ExpectEveryReadAnswersAndTheTextIsForgotten(const ReadCluster& cluster, const std::string& target,
                                                        const std::string& field, const nlohmann::json& want) {
  // Reads sent to a replica: every archive request but the probes that ask
  // a replica which file it serves (sent whenever it has said nothing for a
  // second, on a slow machine between any two asks).
  const auto replica_reads = [&] {
    return cluster.ReadFigure("archive_requests") - cluster.ReadFigure("archive_cache_probes");
  };
  int64_t hits = cluster.ReadFigure("archive_cache_hits");
  int64_t reads = replica_reads();
  for (int ask = 1; ask <= 3; ++ask) {
    const nlohmann::json got = cluster.Api(target);
    EXPECT_EQ(got["http_status"], 200) << "ask " << ask << ": " << got.dump();
    EXPECT_EQ(got["data"][field], want) << "ask " << ask << ": " << got.dump();
    const int64_t hits_now = cluster.ReadFigure("archive_cache_hits");
    const int64_t reads_now = replica_reads();
    if (ask == 2) {
      EXPECT_GT(hits_now, hits) << "the second read did not come from the cache";
      EXPECT_EQ(reads_now, reads) << "the second read asked a replica: its records were not kept";
    }
    if (ask == 3) {
      EXPECT_GT(reads_now, reads) << "the third read did not ask a replica again";
    }
    hits = hits_now;
    reads = reads_now;
  }
}

}  // namespace clickatron::api::testing

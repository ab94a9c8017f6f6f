// What the damaged-record tests check the same way: a query asked three
// times over an archive record whose text a read can skip past where the
// query does not need it (integration_damaged_*_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/query/cluster_fixture.h"

namespace clickatron::api::testing {

// Asks `target` three times; each answer's data[field] must be `want`. The
// first read comes from a replica, the next two from the read cache: the
// kept text is read as a replica's is, only where the query needs it, so
// the damage never fails a query and no replica is asked again.
inline void ExpectEveryReadAnswersFromTheKeptText(const ReadCluster& cluster, const std::string& target,
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
    if (ask > 1) {
      EXPECT_GT(hits_now, hits) << "ask " << ask << " did not come from the cache";
      EXPECT_EQ(reads_now, reads) << "ask " << ask << " asked a replica: the records were not kept";
    }
    hits = hits_now;
    reads = reads_now;
  }
}

}  // namespace clickatron::api::testing

// A realtime shard whose store is lost (wiped, replaced, or started on a
// mistyped data_dir) reports a watermark below what it had confirmed
// durable. The API re-sends the batches it still holds: lines of days the
// shard still has open are applied again (the store that had them is gone).
// Lines of days it has closed since are dropped when the archive already
// reaches their day: moved to late data, as a first delivery's would be, the
// rebuild would add them to an archive that has them from the old store's
// export, every such click counted twice. A closed day the archive does not
// reach yet (never exported) gets them as late data.
#include <csignal>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/ymdh.h"
#include "api/ingest/cluster_fixture.h"

namespace clickatron::api::write_testing {
namespace {

constexpr int64_t kDay = kSecondsPerDay;

nlohmann::json Sender(const WriteCluster& c) {
  nlohmann::json s = c.ApiStats();
  return s.is_object() && s.contains("write") ? s["write"]["shards"][0] : nlohmann::json(nullptr);
}

void Rotate(const WriteCluster& c, int64_t today) {
  auto r = HttpPost(c.Peer(WriteCluster::Realtime(0)), "/rotate?today=" + FormatDate(today), "");
  ASSERT_EQ(r.status_code, 200) << r.body;
}

// Every total and subtotal record on the shard.
std::map<std::string, int64_t> Stored(const WriteCluster& c) {
  std::map<std::string, int64_t> got = c.Counters("t|");
  for (const auto& [k, v] : c.Counters("c.t|")) got[k] = v;
  return got;
}

// Stops the shard, throws its store away and starts it on an empty data_dir.
void WipeShard(WriteCluster& c) {
  const std::string name = WriteCluster::Realtime(0);
  ASSERT_EQ(c.Stop(name), 0);
  std::filesystem::remove_all(c.DataDir(name));
  std::filesystem::create_directories(c.DataDir(name));
  c.Start(name);
}

// An archive file with no records whose manifest says it reaches `last_day`,
// as after the nightly runs that exported the days up to it.
void WriteArchiveReaching(const WriteCluster& c, int64_t last_day) {
  Manifest m;
  m.generation = 1;
  m.shard = 0;
  m.shard_count = 1;
  m.last_day = FormatDate(last_day);
  m.created = FormatIsoTime(0);
  DescribeArchiveData("", &m);
  ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(c.ArchiveFile()), m).ok());
  ASSERT_TRUE(WriteFileAtomically(c.ArchiveFile(), "").ok());
}

// Yesterday's and today's clicks go to the shard, yesterday closes, and the
// shard's store is lost while the API is down (only the API's marker file
// then says which batches the shard had persisted). With `archived`, the
// archive reaches yesterday. Returns through the out-params what the API
// did with yesterday's lines.
void LoseTheStore(bool archived, uint64_t* dropped, uint64_t* late) {
  ClusterSpec spec = WriteCluster::Spec(1);
  spec.realtime.SetInt("checkpoint_interval_ms", 50);
  WriteCluster c(spec);
  c.StartAll();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const int64_t today = FloorDiv(now, kDay);
  if (archived) WriteArchiveReaching(c, today - 1);
  c.Start(c.ArchiveName());
  Rotate(c, today);  // open: yesterday and today, even across midnight

  std::map<std::string, int64_t> want_today, want_all;
  for (int i = 0; i < 30; ++i) {
    std::string body;
    for (int k = 0; k < 4; ++k) {
      const std::string key = fmt::format("lost{}", (i + k) % 7);
      const bool on_yesterday = (i + k) % 2 == 0;
      const int64_t ts = on_yesterday ? (today - 1) * kDay + ((i + k) % 24) * 3600 + 5 : now;
      const int value = 1 + (i * 3 + k) % 5;
      body += fmt::format("ns=t&key={}&ts={}&value={}&sub=c:JP\n", key, ts, value);
      const std::string h = *YmdhFromUnix(ts);
      for (const std::string& record : {"t|" + key + "." + h, "c.t|" + key + ".JP." + h}) {
        want_all[record] += value;
        if (!on_yesterday) want_today[record] += value;
      }
    }
    auto r = HttpPost(c.Api(), "/incr", body);
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  // Everything applied and persisted, and the API has heard so.
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json s = Sender(c);
    return s.is_object() && c.Drained() && s["written_seq"] != 0 && s["shard_durable_seq"] == s["written_seq"];
  })) << Sender(c).dump();
  EXPECT_EQ(Stored(c), want_all);
  Rotate(c, today + 1);  // yesterday closes (its export would take it to the archive now)

  // The store is lost while the API is down too: only its marker file says
  // which batches the shard had persisted.
  ASSERT_EQ(c.Stop("api-0"), 0);
  WipeShard(c);
  Rotate(c, today + 1);
  c.Start("api-0");
  ASSERT_TRUE(WaitFor([&] { return c.Drained() && Stored(c) == want_today; }))
      << Sender(c).dump() << "\nstored: " << nlohmann::json(Stored(c)).dump();
  nlohmann::json sender = Sender(c);
  EXPECT_EQ(sender["store_losses"], 1) << sender.dump();
  EXPECT_EQ(sender["last_error"], "") << "cleared by the batches answered since: " << sender.dump();
  EXPECT_EQ(c.ApiStats()["write"]["late_lines_written"], sender["late_lines"]);
  *dropped = sender.value("lost_store_dropped_lines", uint64_t{0});
  *late = sender["late_lines"].get<uint64_t>();

  // Lost again while the API runs and nothing new comes in: the API notices
  // by polling, and today's clicks come back without waiting for a batch.
  // (Paused meanwhile, so that the new store's ring has turned before it is
  // polled.) The lines this run already moved to late data are not moved
  // there a second time, also once their batches are durable on the store
  // that is lost next (waited for: a sender that forgot them then would
  // move them again).
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json s = Sender(c);
    return s.is_object() && s["shard_durable_seq"] == s["written_seq"];
  })) << Sender(c).dump();
  c.Signal("api-0", SIGSTOP);
  WipeShard(c);
  Rotate(c, today + 1);
  c.Signal("api-0", SIGCONT);
  ASSERT_TRUE(WaitFor([&] { return c.Drained() && Stored(c) == want_today; }))
      << Sender(c).dump() << "\nstored: " << nlohmann::json(Stored(c)).dump();
  EXPECT_EQ(c.ApiStats()["write"]["late_lines_written"], *late) << "late data written twice for one batch";
}

TEST(IntegrationWriteLostStoreTest, ClosedDaysTheArchiveHoldsAreNotCountedAgain) {
  uint64_t dropped = 0, late = 0;
  LoseTheStore(/*archived=*/true, &dropped, &late);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(late, 0u) << "lines of a day the archive holds went to late data: counted twice by the rebuild";
}

TEST(IntegrationWriteLostStoreTest, ClosedDaysNotYetArchivedGoToLateData) {
  uint64_t dropped = 0, late = 0;
  LoseTheStore(/*archived=*/false, &dropped, &late);
  EXPECT_EQ(dropped, 0u) << "lines of a day never exported were dropped: lost";
  EXPECT_GT(late, 0u);
}

}  // namespace
}  // namespace clickatron::api::write_testing

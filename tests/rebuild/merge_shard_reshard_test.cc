// The merge-shard task re-partitioning a generation into another shard
// count: every previous file read as an input through the shard filter, its
// day records dropped and made again, so the new files are exactly the
// oracle's records cut by the new count, and a day's record is never the sum
// of its hours twice (the previous file's record plus the one made again).

#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"
#include "clickatron/shard.h"
#include "merge_shard_task.h"
#include "rebuild_cluster_fixture.h"
#include "split.h"
#include "task_dir.h"
#include "testutil/testutil.h"

namespace clickatron::rebuild {
namespace {

constexpr int kOldShards = 2;

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Random totals, subtotal hours (several hours of a few days, so most days
// have more than one hour) and hashed lookups, added to every expectation
// given; keys and days overlap between seeds.
void AddRandomRecords(uint32_t seed, int count, const std::vector<Expectation*>& into) {
  std::mt19937 rng(seed);
  const int64_t first_day = 20000;
  const std::vector<std::string> countries = {"US", "JP", "DE"};
  for (int i = 0; i < count; ++i) {
    const std::string tkey = fmt::format("key{}", rng() % 50);
    const std::string ymdh = Ymdh(first_day + static_cast<int64_t>(rng() % 3), static_cast<int>(rng() % 24));
    const int64_t value = 1 + static_cast<int64_t>(rng() % 9);
    const std::string& country = countries[rng() % countries.size()];
    const std::string hash = fmt::format("{:016x}", rng() % 20);
    for (Expectation* e : into) {
      e->AddTotal("u", tkey, ymdh, value);
      e->AddSubtotal("c", "u", tkey, country, ymdh, value);
      e->AddLookup(hash, "http://example.com/" + hash);
    }
  }
}

class ReshardMerge : public ::testing::Test {
 protected:
  // Generation 1 as a rebuild leaves it: kOldShards files with manifests
  // saying day_subtotals_every_day.
  void WriteOldGeneration(const Expectation& old) {
    for (int s = 0; s < kOldShards; ++s) {
      const std::string path = dir_ / fmt::format("old-{}.csv", s);
      const std::string text = JoinLines(old.ShardLines(s, kOldShards));
      ASSERT_FALSE(text.empty());
      ASSERT_TRUE(WriteFileAtomically(path, text).ok());
      Manifest m;
      m.generation = 1;
      m.shard = s;
      m.shard_count = kOldShards;
      m.bytes = text.size();
      m.crc32 = Crc32(text);
      m.last_day = "2024-10-04";
      m.day_subtotals = true;
      m.day_subtotals_every_day = true;
      ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(path), m).ok());
      old_.push_back({path, m});
    }
  }
  // The new inputs as one sorted whole file (every shard's lines).
  std::string WriteNewInput(const Expectation& fresh) {
    const std::string path = dir_ / "new.csv";
    EXPECT_TRUE(WriteFileAtomically(path, JoinLines(fresh.ShardLines(0, 1))).ok());
    return path;
  }

  // Runs merge-shard task `shard` of generation 2 cut into `shards`.
  Status RunShard(int shard, int shards, const std::vector<PreviousShardFile>& reshard_from,
                  const std::vector<std::string>& inputs, Manifest* manifest) {
    const TaskPaths task{dir_ / fmt::format("task-{}-of-{}", shard, shards)};
    MergeShardSpec spec;
    spec.shard = shard;
    spec.shard_count = shards;
    spec.generation = 2;
    spec.last_day = "2024-10-05";
    spec.created = "2024-10-06T00:10:00Z";
    spec.reshard_from = reshard_from;
    spec.inputs = inputs;
    CLICKATRON_RETURN_IF_ERROR(WriteTaskSpec(task, spec.ToJson()));  // through the JSON, as an engine runs it
    CLICKATRON_RETURN_IF_ERROR(RunTaskDir(task, ClusterConfig{}, TaskResources{}));
    output_ = MergeShardOutput(task, shard);
    auto m = ReadManifest(ManifestPathFor(output_));
    if (!m.ok()) return m.status();
    *manifest = *m;
    return Status::Ok();
  }

  testing::TempDir dir_;
  std::vector<PreviousShardFile> old_;
  std::string output_;  // the file RunShard wrote last
};

TEST_F(ReshardMerge, EveryNewShardHoldsExactlyTheOraclesRecordsWithDayRecordsOnce) {
  Expectation old, all;
  AddRandomRecords(1, 600, {&old, &all});
  Expectation fresh;
  AddRandomRecords(2, 300, {&fresh, &all});  // the same keys and days: hours and day records meet
  WriteOldGeneration(old);
  const std::string input = WriteNewInput(fresh);
  for (const int shards : {3, 1, 5}) {  // grown, shrunk, grown past the old count twice
    uint64_t records = 0;
    for (int s = 0; s < shards; ++s) {
      Manifest m;
      const Status st = RunShard(s, shards, old_, {input}, &m);
      ASSERT_TRUE(st.ok()) << st.ToString();
      const std::vector<std::string> want = all.ShardLines(s, shards);
      EXPECT_EQ(FileLines(output_), want) << "shard " << s << " of " << shards;
      for (const std::string& line : FileLines(output_)) {
        EXPECT_EQ(ShardOf(ShardKeyOfValidArchiveLine(line), static_cast<uint32_t>(shards)), static_cast<uint32_t>(s))
            << line;
      }
      EXPECT_EQ(m.shard, s);
      EXPECT_EQ(m.shard_count, shards);
      EXPECT_EQ(m.generation, 2u);
      EXPECT_TRUE(m.day_subtotals_every_day);
      auto text = ReadFileToString(output_);
      ASSERT_TRUE(text.ok());
      EXPECT_EQ(m.crc32, Crc32(*text));
      EXPECT_EQ(m.bytes, text->size());
      records += m.records;
    }
    uint64_t want_records = 0;
    for (int s = 0; s < shards; ++s) want_records += all.ShardLines(s, shards).size();
    EXPECT_EQ(records, want_records) << shards << " shards";
  }
}

// A shipping engine gets the previous files cut by the new count on the
// rebuild host, as plain inputs: the same bytes come out.
TEST_F(ReshardMerge, PreviousFilesCutFirstGiveTheSameFiles) {
  Expectation old, fresh;
  AddRandomRecords(3, 400, {&old});
  AddRandomRecords(4, 200, {&fresh});
  WriteOldGeneration(old);
  const std::string input = WriteNewInput(fresh);
  constexpr int kNew = 3;
  std::vector<std::vector<std::string>> parts(kOldShards);
  for (int o = 0; o < kOldShards; ++o) {
    for (int a = 0; a < kNew; ++a) parts[o].push_back(dir_ / fmt::format("old-{}-part-{}.csv", o, a));
    ASSERT_TRUE(SplitSortedFile(old_[o].file, kNew, parts[o]).ok());
  }
  for (int s = 0; s < kNew; ++s) {
    Manifest whole, cut;
    ASSERT_TRUE(RunShard(s, kNew, old_, {input}, &whole).ok());
    const std::string from_whole = *ReadFileToString(output_);
    std::vector<std::string> inputs = {input};
    for (int o = 0; o < kOldShards; ++o) inputs.push_back(parts[o][s]);
    ASSERT_TRUE(RunShard(s, kNew, {}, inputs, &cut).ok());
    EXPECT_EQ(*ReadFileToString(output_), from_whole) << "shard " << s;
    EXPECT_EQ(cut.crc32, whole.crc32);
  }
}

TEST_F(ReshardMerge, APreviousFileThatDoesNotMatchItsManifestIsRefused) {
  Expectation old;
  AddRandomRecords(5, 200, {&old});
  WriteOldGeneration(old);
  // Same size, one count changed: only the crc32 tells.
  auto text = ReadFileToString(old_[1].file);
  ASSERT_TRUE(text.ok());
  const size_t colon = text->find(':');
  ASSERT_NE(colon, std::string::npos);
  (*text)[colon + 1] = (*text)[colon + 1] == '1' ? '2' : '1';
  ASSERT_TRUE(WriteFileAtomically(old_[1].file, *text).ok());
  Manifest m;
  const Status st = RunShard(0, 3, old_, {}, &m);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("does not match its manifest"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace clickatron::rebuild

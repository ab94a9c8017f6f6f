// QueryGather (api/query/query_gather.h) over scripted archive replicas and
// a scripted realtime shard (testutil/fake_http_client.h, fake_read_cluster.h):
// the gather's own rules, without daemons. A breakdown reads the total's
// record, then the subtotal records its hours name, in two round trips that
// must see one archive file: a deploy between them starts the gather again,
// and the answer is the new file's alone, never a mix of two.
#include "query/query_gather.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "api/query/fake_read_cluster.h"
#include "clickatron/config.h"
#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "deletions/deletion_log.h"
#include "testutil/testutil.h"

namespace clickatron::api::query_gather_test {
namespace {

using namespace fake_read_cluster;  // FakeHttpClient, Answer, ServeFile, …

const HostPort kRealtimePeer{"127.0.0.1", 7201};
// 2026-11-29, a day the archive holds (its last day is the 30th).
const int64_t kDay = DaysFromCivil({2026, 11, 29});
constexpr int64_t kHour = kSecondsPerHour;

// An archive line's value: what follows the key's comma.
std::string ValueOf(const ArchiveRecord& record) {
  const std::string line = FormatArchiveLine(record);
  return line.substr(line.find(',') + 1);
}

// The records of a file holding `hours`: each hour's (hour, [(value, count)]):
// the key's total record and one subtotal record per hour.
std::map<std::string, std::string> Records(
    const std::vector<std::pair<int64_t, std::vector<std::pair<std::string, int64_t>>>>& hours) {
  ArchiveRecord total;
  total.type = RecordType::kTotal;
  total.key = "u|k";
  std::map<std::string, std::string> out;
  for (const auto& [hour, values] : hours) {
    const std::string code = *YmdhFromUnix(hour);
    ArchiveRecord sub;
    sub.type = RecordType::kSubtotal;
    sub.key = "c.u|k." + code;
    int64_t sum = 0;
    for (const auto& [value, count] : values) {
      sub.columns.push_back({value, count});
      sum += count;
    }
    std::sort(sub.columns.begin(), sub.columns.end(),
              [](const ArchiveColumn& a, const ArchiveColumn& b) { return a.name < b.name; });
    total.columns.push_back({code, sum});
    out[sub.key] = ValueOf(sub);
  }
  out[total.key] = ValueOf(total);
  return out;
}

class QueryGatherTest : public ::testing::Test {
 protected:
  QueryGatherTest() {
    cluster_ = ArchiveCluster(1, 1);
    AddRealtimeShard(cluster_, 0, kRealtimePeer);
    // Realtime holds nothing of these days.
    client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, ""));
    client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, ""));
    ArchiveReader::Options options;
    options.replica_penalty = std::chrono::hours(1);
    archive_ = std::make_unique<ArchiveReader>(cluster_, client_, stats_, options);
    archive_reads_ = std::make_unique<CachedArchiveReader>(*archive_, nullptr, stats_);
    realtime_ = std::make_unique<RealtimeReader>(cluster_, client_, stats_, RealtimeReader::Options{});
    gather_ = std::make_unique<QueryGather>(cluster_, *archive_reads_, *realtime_, lookups_, stats_);
  }

  // The reader and gather again, with a read cache of `bytes` (the
  // fixture's keep nothing), both readers sharing what realtime says of the
  // archive (known_generation.h), as a node's do.
  void KeepAnswers(size_t bytes) {
    gather_.reset();
    archive_reads_.reset();
    archive_.reset();
    realtime_.reset();
    kept_ = std::make_shared<ReadCache>(bytes);
    auto known = std::make_shared<KnownGeneration>(std::string());
    ArchiveReader::Options options;
    options.replica_penalty = std::chrono::hours(1);
    options.known_generation = known;
    archive_ = std::make_unique<ArchiveReader>(cluster_, client_, stats_, options);
    archive_reads_ = std::make_unique<CachedArchiveReader>(*archive_, kept_, stats_);
    realtime_ = std::make_unique<RealtimeReader>(cluster_, client_, stats_,
                                                 RealtimeReader::Options{.known_generation = known});
    gather_ = std::make_unique<QueryGather>(cluster_, *archive_reads_, *realtime_, lookups_, stats_);
  }

  // (hour, count) of the total and (hour, value, count) of the subtotals,
  // sorted: what a breakdown of the archived day answered.
  using Rows = std::vector<std::tuple<int64_t, std::string, int64_t>>;
  Result<Rows> Breakdown() {
    std::optional<Result<BreakdownData>> got;
    int calls = 0;
    gather_->FetchBreakdown("c", "u", "k", kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay,
                            [&](Result<BreakdownData> data) {
                              ++calls;
                              got.emplace(std::move(data));
                            });
    client_.RunUntilIdle();
    EXPECT_EQ(calls, 1);
    if (!got) return Status::Internal("FetchBreakdown never called back");
    if (!got->ok()) return got->status();
    Rows rows;
    for (const auto& [hour, count] : (*got)->total) rows.emplace_back(hour, "", count);
    for (const SubtotalCount& s : (*got)->subtotals) rows.emplace_back(s.hour, s.key, s.count);
    std::sort(rows.begin(), rows.end());
    return rows;
  }

  // A breakdown of kDay as one sum (its whole UTC day may be read as its
  // day record): the gather's answer, or nothing if it never called back.
  std::optional<Result<BreakdownData>> WholeDay() {
    std::optional<Result<BreakdownData>> got;
    gather_->FetchBreakdown("c", "u", "k", kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay,
                            [&](Result<BreakdownData> data) { got.emplace(std::move(data)); }, HourSpan{0, 0},
                            std::nullopt, std::vector<int64_t>{kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay});
    client_.RunUntilIdle();
    EXPECT_TRUE(got && got->ok()) << (got ? got->status().ToString() : "no answer");
    return got;
  }

  // A replica serving `us` clicks from the US in `hour`, read once by a
  // breakdown (what the node keeps, with KeepAnswers).
  // Shard 0 with two replicas (each test says what they serve); realtime
  // holds nothing and says generation 8 is deployed, through 2026-11-30.
  // The deployed generation 8 (5 clicks from the US in `hour`) and last
  // week's generation 7 restored from a backup (2 clicks, through 11-28).
  static std::pair<std::shared_ptr<ServedFileState>, std::shared_ptr<ServedFileState>> DeployedEightAndRestoredSeven(
      int64_t hour) {
    auto deployed = std::make_shared<ServedFileState>();
    deployed->generation = 8;
    deployed->crc32 = 2222;
    deployed->records = Records({{hour, {{"US", 5}}}});
    auto restored = std::make_shared<ServedFileState>();
    restored->last_day = "2026-11-28";
    restored->records = Records({{hour, {{"US", 2}}}});
    return {deployed, restored};
  }

  void TwoReplicasWhileRealtimeSaysEightIsDeployed() {
    cluster_ = ArchiveCluster(1, 2);
    AddRealtimeShard(cluster_, 0, kRealtimePeer);
    KeepAnswers(0);
    client_.Forget(kRealtimePeer);
    const std::vector<std::pair<std::string, std::string>> told = {{"X-Realtime-Archive-Generation", "8"},
                                                                    {"X-Realtime-Archived-Through", "2026-11-30"}};
    client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, "", told));
    client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, "", told));
  }

  std::shared_ptr<ServedFileState> ServeAndReadOneHour(int64_t hour, int64_t us) {
    auto file = std::make_shared<ServedFileState>();
    file->records = Records({{hour, {{"US", us}}}});
    ServeFile(client_, ReplicaPeer(0, 0), file);
    const Result<Rows> got = Breakdown();
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (got.ok()) {
      EXPECT_EQ(*got, (Rows{{hour, "", us}, {hour, "US", us}}));
    }
    return file;
  }

  // Declared first, destroyed last: the client's and readers' events are on it.
  std::unique_ptr<event_base, decltype(&event_base_free)> base_{event_base_new(), &event_base_free};
  FakeHttpClient client_{base_.get()};
  ReadStats stats_;
  ReadCache cache_{0};
  LookupCache lookups_{cache_};
  ClusterConfig cluster_;
  std::shared_ptr<ReadCache> kept_;  // KeepAnswers's
  std::unique_ptr<ArchiveReader> archive_;
  std::unique_ptr<CachedArchiveReader> archive_reads_;
  std::unique_ptr<RealtimeReader> realtime_;
  std::unique_ptr<QueryGather> gather_;
};

TEST_F(QueryGatherTest, ABreakdownReadsTheTotalThenTheSubtotalsItsHoursName) {
  auto file = std::make_shared<ServedFileState>();
  file->records = Records({{kDay * kSecondsPerDay + 3 * kHour, {{"US", 2}, {"JP", 1}}},
                           {kDay * kSecondsPerDay + 9 * kHour, {{"US", 4}}}});
  ServeFile(client_, ReplicaPeer(0, 0), file);
  const Result<Rows> got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = kDay * kSecondsPerDay + 9 * kHour;
  EXPECT_EQ(*got, (Rows{{h3, "", 3}, {h3, "JP", 1}, {h3, "US", 2}, {h9, "", 4}, {h9, "US", 4}}));
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/mget").size(), 1u);  // the two hours' records together
  EXPECT_EQ(stats_.generation_retries.load(), 0u);
}

// A subtotal hour loaded without its key's total hour (the load cannot
// tell) is in its day's record but not among the total's hours. A breakdown
// of that whole day reads the day record whether it asked it beside the
// total (realtime has said which day the archive ends on) or after it (the
// first query after a start): a probe read 0 and then 19 for the same query.
TEST_F(QueryGatherTest, AWholeDayReadsItsDayRecordWhetherAskedEarlyOrAfterTheTotal) {
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = kDay * kSecondsPerDay + 9 * kHour;
  auto file = std::make_shared<ServedFileState>();
  file->records = Records({{h9, {{"US", 4}}}});
  ArchiveRecord orphan;  // hour 3's subtotal, its total hour missing
  orphan.type = RecordType::kSubtotal;
  orphan.key = "c.u|k." + *YmdhFromUnix(h3);
  orphan.columns = {{"US", 2}};
  file->records[orphan.key] = ValueOf(orphan);
  ArchiveRecord day;  // the day's record: every subtotal hour of the day
  day.type = RecordType::kSubtotal;
  day.key = "c.u|k." + *DayCodeFromDays(kDay);
  day.columns = {{"US", 6}};
  file->records[day.key] = ValueOf(day);
  auto whole_day = [&] {
    const std::optional<Result<BreakdownData>> got = WholeDay();
    int64_t us = -1;
    if (got && got->ok()) {
      us = 0;
      for (const SubtotalCount& s : (*got)->subtotals) us += s.key == "US" ? s.count : 0;
    }
    return us;
  };
  // Realtime does not say where the archive ends: asked after the total.
  ServeFile(client_, ReplicaPeer(0, 0), file);
  EXPECT_EQ(whole_day(), 6);
  EXPECT_EQ(stats_.early_span_reads.load(), 0u);
  // Realtime says it: asked beside the total.
  client_.Forget(kRealtimePeer);
  const std::vector<std::pair<std::string, std::string>> told = {{"X-Realtime-Archived-Through", "2026-11-30"}};
  client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, "", told));
  client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, "", told));
  whole_day();  // learns the last day
  EXPECT_EQ(whole_day(), 6);
  EXPECT_GE(stats_.early_span_reads.load(), 1u);
  // A file of loads alone (no day archived yet, no last day): its day
  // records too (a probe read 0 there, before the first nightly run).
  file->last_day = "";
  file->generation = 9;
  client_.Forget(kRealtimePeer);
  client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, ""));
  client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, ""));
  KeepAnswers(0);
  ServeFile(client_, ReplicaPeer(0, 0), file);
  EXPECT_EQ(whole_day(), 6);
}

// Whole days are read as records up to 2127's end: a window reaching past
// it (reference times go to 9999) is answered, not OUT_OF_RANGE for a day
// record that can have no code. A file of loads alone (no last day) plans
// them up to the window's end.
TEST_F(QueryGatherTest, AWindowReachingPast2127IsAnswered) {
  auto file = std::make_shared<ServedFileState>();
  file->records = Records({{kDay * kSecondsPerDay + 3 * kHour, {{"US", 2}}}});
  file->last_day = "";
  ServeFile(client_, ReplicaPeer(0, 0), file);
  const int64_t begin = kEndOfHourCodes - 4 * kSecondsPerDay, end = kEndOfHourCodes + 2 * kSecondsPerDay;
  std::optional<Result<BreakdownData>> got;
  gather_->FetchBreakdown("c", "u", "k", begin, end, [&](Result<BreakdownData> data) { got.emplace(std::move(data)); },
                          HourSpan{0, 0}, std::nullopt, std::vector<int64_t>{begin, end});
  client_.RunUntilIdle();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->status().ToString();
  EXPECT_TRUE((*got)->subtotals.empty());
}

TEST_F(QueryGatherTest, ADeployBetweenTheTotalAndItsSubtotalsStartsTheGatherAgain) {
  // Generation 7 holds hours 3 and 9; generation 8, deployed right after the
  // replica answered the total's get, holds hours 3, 9 and 15 with other
  // counts. Generation 7's total with generation 8's subtotals would count
  // hour 15's subtotals without its total, and hour 3 with both.
  auto file = std::make_shared<ServedFileState>();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = h3 + 6 * kHour, h15 = h9 + 6 * kHour;
  file->records = Records({{h3, {{"US", 2}, {"JP", 1}}}, {h9, {{"US", 4}}}});
  ServeFile(client_, ReplicaPeer(0, 0), file);
  int gets = 0;
  client_.Handle(ReplicaPeer(0, 0), "/get", [&gets, file, h3, h9, h15](const FakeHttpClient::Request& request) {
    Answer answer = AnswerGet(*file, request);
    if (++gets == 1) {
      file->generation = 8;
      file->crc32 = 2222;
      file->records = Records({{h3, {{"US", 5}}}, {h9, {{"US", 4}, {"DE", 1}}}, {h15, {{"JP", 7}}}});
    }
    return answer;
  });
  const Result<Rows> got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Rows{{h3, "", 5}, {h3, "US", 5}, {h9, "", 5}, {h9, "DE", 1}, {h9, "US", 4}, {h15, "", 7},
                        {h15, "JP", 7}}));
  EXPECT_EQ(stats_.generation_retries.load(), 1u);
  EXPECT_EQ(gets, 2);  // the total read again, from generation 8
}

// A deletion of the key taken while a breakdown's first reads are out: its
// day record, asked beside the total before the deletion, holds the deleted
// hour. The total masked with the deletion beside that day record would
// answer rows from before the deletion with a total from after it (a probe
// saw DE 31 … none 61 where either DE 26 … none 74 or DE 31 … none 74 was
// right). The breakdown is read again, split at the deleted hour.
TEST_F(QueryGatherTest, ADeletionTakenWhileTheFirstReadsAreOutIsInTheWholeAnswer) {
  clickatron::testing::TempDir dir;
  auto log = DeletionLog::Open(dir.path() + "/deletions");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  gather_ = std::make_unique<QueryGather>(cluster_, *archive_reads_, *realtime_, lookups_, stats_, log->get());
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = kDay * kSecondsPerDay + 9 * kHour;
  auto file = std::make_shared<ServedFileState>();
  file->records = Records({{h3, {{"US", 2}}}, {h9, {{"US", 4}, {"JP", 1}}}});
  ArchiveRecord day;
  day.type = RecordType::kSubtotal;
  day.key = "c.u|k." + *DayCodeFromDays(kDay);
  day.columns = {{"JP", 1}, {"US", 6}};
  file->records[day.key] = ValueOf(day);
  ServeFile(client_, ReplicaPeer(0, 0), file);
  // Realtime says where the archive ends: whole days are asked beside the total.
  client_.Forget(kRealtimePeer);
  const std::vector<std::pair<std::string, std::string>> told = {{"X-Realtime-Archived-Through", "2026-11-30"}};
  client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, "", told));
  client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, "", told));
  auto whole_day = [&] {
    const std::optional<Result<BreakdownData>> got = WholeDay();
    std::map<std::string, int64_t> sums;
    if (got && got->ok()) {
      for (const auto& [hour, count] : (*got)->total) sums[""] += count;
      for (const SubtotalCount& s : (*got)->subtotals) sums[s.key] += s.count;
    }
    return sums;
  };
  EXPECT_EQ(whole_day(), (std::map<std::string, int64_t>{{"", 7}, {"JP", 1}, {"US", 6}}));  // learns the last day
  client_.ClearRequests();
  // The replica answers gets from the file; a deletion of [from, to) of the
  // key is taken as it answers the first.
  int gets = 0;
  auto delete_at_first_get = [&](std::string id, int64_t from, int64_t to) {
    gets = 0;
    client_.Handle(ReplicaPeer(0, 0), "/get", [&, id, from, to](const FakeHttpClient::Request& request) {
      Answer answer = AnswerGet(*file, request);
      if (++gets == 1) {
        Deletion d;
        d.id = id;
        d.ns = "u";
        d.tkey = d.key = "k";
        d.from_unix = from;
        d.to_unix = to;
        EXPECT_TRUE((*log)->Put(d).ok());
      }
      return answer;
    });
  };
  delete_at_first_get("d1", h9, h9 + kHour);
  EXPECT_EQ(whole_day(), (std::map<std::string, int64_t>{{"", 2}, {"US", 2}}));
  EXPECT_EQ(stats_.deletion_retries.load(), 1u);
  // The first try asked the day record beside the total; the second, the
  // hour left beside the deleted one (one key each: sent as a get).
  std::vector<std::string> asked;
  for (const FakeHttpClient::Request& r : client_.RequestsTo(ReplicaPeer(0, 0), "/get")) asked.push_back(r.query());
  const std::string total_key = "key=" + PercentEncode("u|k");
  EXPECT_EQ(asked, (std::vector<std::string>{total_key, "key=" + PercentEncode(day.key), total_key,
                                             "key=" + PercentEncode("c.u|k." + *YmdhFromUnix(h3))}));
  EXPECT_EQ(gets, 4);
  // A deletion of hours outside the window, taken the same way, changes
  // nothing the breakdown reads: it is not read again.
  delete_at_first_get("d2", (kDay - 7) * kSecondsPerDay, (kDay - 6) * kSecondsPerDay);
  EXPECT_EQ(whole_day(), (std::map<std::string, int64_t>{{"", 2}, {"US", 2}}));
  EXPECT_EQ(stats_.deletion_retries.load(), 1u);
}

TEST_F(QueryGatherTest, ADeployOnEveryReadEndsInShardUnavailableNotAMix) {
  // A file that changes between every two round trips: after a few attempts
  // the gather gives up with 503, rather than answer from two files.
  auto file = std::make_shared<ServedFileState>();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = h3 + 6 * kHour;
  file->records = Records({{h3, {{"US", 2}}}, {h9, {{"US", 4}}}});
  ServeFile(client_, ReplicaPeer(0, 0), file);
  client_.Handle(ReplicaPeer(0, 0), "/get", [file](const FakeHttpClient::Request& request) {
    Answer answer = AnswerGet(*file, request);
    ++file->generation;
    ++file->crc32;
    return answer;
  });
  const Result<Rows> got = Breakdown();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().reason(), "SHARD_UNAVAILABLE") << got.status().ToString();
  // kMaxGenerationAttempts (3) attempts, each with its own total: 2 retries.
  EXPECT_EQ(stats_.generation_retries.load(), 2u);
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 3u);
}

TEST_F(QueryGatherTest, ASubtotalRecordThatIsNoRecordIsCorruptionNotAShortAnswer) {
  // A replica whose subtotal record is garbage under good headers: the
  // query fails; it never answers as if the hour had no subtotals.
  auto file = std::make_shared<ServedFileState>();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = h3 + 6 * kHour;
  file->records = Records({{h3, {{"US", 2}}}, {h9, {{"US", 4}}}});
  file->records["c.u|k." + *YmdhFromUnix(h9)] = "US:four";
  ServeFile(client_, ReplicaPeer(0, 0), file);
  const Result<Rows> got = Breakdown();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << got.status().ToString();
}

TEST_F(QueryGatherTest, AKeptTotalDamagedBeforeTheWindowAnswersAndIsAskedAgain) {
  // The total's text holds a bad column the day before the window. A read
  // from a replica decodes the window's columns only and answers; the
  // second read finds the text kept, fails to decode it whole, answers as
  // the first did and forgets it; the third asks the replica again.
  KeepAnswers(1 << 20);
  auto file = std::make_shared<ServedFileState>();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour, h9 = h3 + 6 * kHour;
  file->records = Records({{h3, {{"US", 2}, {"JP", 1}}}, {h9, {{"US", 4}}}});
  file->records["u|k"] = *YmdhFromUnix(h3 - kSecondsPerDay) + ":notacount " + file->records["u|k"];
  ServeFile(client_, ReplicaPeer(0, 0), file);
  const Rows want{{h3, "", 3}, {h3, "JP", 1}, {h3, "US", 2}, {h9, "", 4}, {h9, "US", 4}};
  const std::vector<size_t> gets_after = {1, 1, 2};
  for (size_t ask = 0; ask < gets_after.size(); ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_TRUE(got.ok()) << "ask " << ask + 1 << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << "ask " << ask + 1;
    EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), gets_after[ask]) << "ask " << ask + 1;
  }
  EXPECT_GE(stats_.archive_cache_hits.load(), 1u);
}

TEST_F(QueryGatherTest, AKeptAnswerOfAGenerationBeforeTheDeployedOneIsReadAgain) {
  // A restatement: generation 8 holds the same day with other counts. The
  // node kept generation 7's answers and has not heard from the replica
  // since; the query's realtime answer says 8 is deployed. Its kept answers
  // are not the answer: it reads again, from the replica.
  KeepAnswers(1 << 20);
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  auto file = ServeAndReadOneHour(h3, 2);

  file->generation = 8;
  file->crc32 = 2222;
  file->records = Records({{h3, {{"US", 5}, {"JP", 1}}}});
  client_.Forget(kRealtimePeer);
  const std::vector<std::pair<std::string, std::string>> told = {{"X-Realtime-Archive-Generation", "8"},
                                                                  {"X-Realtime-Archived-Through", "2026-11-30"}};
  client_.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, "", told));
  client_.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, "", told));
  const Result<Rows> got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Rows{{h3, "", 6}, {h3, "JP", 1}, {h3, "US", 5}}));
  EXPECT_EQ(stats_.handover_rereads.load(), 1u);
}

// Two replicas of the shard: replica 1 was restarted on last week's file
// (generation 7, restored from a backup) while replica 0, on the deployed
// generation 8, does not answer. Realtime has handed generation 8's days
// over. An answer of replica 1 read again lands on replica 1 again: not a
// rollback of the archive (the other replica has 8), so 503, not an answer
// without the days 7 lacks. Once replica 0 answers, reads are exact.
TEST_F(QueryGatherTest, AReplicaOnAnOlderFileIsNoAnswerWhileTheOtherIsAway) {
  TwoReplicasWhileRealtimeSaysEightIsDeployed();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  const auto [deployed, restored] = DeployedEightAndRestoredSeven(h3);
  ServeFile(client_, ReplicaPeer(0, 1), restored);
  for (const char* path : {"/get", "/mget", "/manifest"}) {
    client_.Script(ReplicaPeer(0, 0), path, Answer::TransportError());
  }
  for (int ask = 0; ask < 3; ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_FALSE(got.ok()) << "ask " << ask << ": answered without the days generation 7 lacks";
    EXPECT_EQ(got.status().reason(), "SHARD_UNAVAILABLE") << got.status().ToString();
  }
  client_.Forget(ReplicaPeer(0, 0));
  ServeFile(client_, ReplicaPeer(0, 0), deployed);
  KeepAnswers(0);  // readers anew: the failed replica's penalty (an hour here) has run out
  for (int ask = 0; ask < 3; ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_TRUE(got.ok()) << "ask " << ask << ": " << got.status().ToString();
    EXPECT_EQ(*got, (Rows{{h3, "", 5}, {h3, "US", 5}})) << "ask " << ask;
  }
}

// Replica 0 was restarted on last week's file (generation 7) and lags;
// replica 1 serves the deployed generation 8. The query that meets replica
// 0's answer reads again from replica 1, and later queries skip replica 0
// for its penalty, as they skip a failed one (before, each query that began
// on it was read twice: 5 of these 6).
TEST_F(QueryGatherTest, AReplicaFoundBehindTheDeployedGenerationIsSkippedByLaterQueries) {
  TwoReplicasWhileRealtimeSaysEightIsDeployed();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  const auto [deployed, restored] = DeployedEightAndRestoredSeven(h3);
  ServeFile(client_, ReplicaPeer(0, 0), restored);
  ServeFile(client_, ReplicaPeer(0, 1), deployed);
  for (int ask = 0; ask < 6; ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_TRUE(got.ok()) << "ask " << ask << ": " << got.status().ToString();
    EXPECT_EQ(*got, (Rows{{h3, "", 5}, {h3, "US", 5}})) << "ask " << ask;
  }
  EXPECT_EQ(stats_.handover_rereads.load(), 1u);
  EXPECT_EQ(client_.RequestsTo(ReplicaPeer(0, 0), "/get").size(), 1u);
}

// A rollback: every replica of the shard serves generation 7 again,
// realtime still names 8 (until the next build). Each query reads twice
// (the second time from the other replica) and answers the archive as it
// is, query after query: no replica is taken for one that lags.
TEST_F(QueryGatherTest, ARollbackOnEveryReplicaIsServedAsTheArchive) {
  TwoReplicasWhileRealtimeSaysEightIsDeployed();
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  auto rolled_back = std::make_shared<ServedFileState>();
  rolled_back->records = Records({{h3, {{"US", 2}}}});
  ServeFile(client_, ReplicaPeer(0, 0), rolled_back);
  ServeFile(client_, ReplicaPeer(0, 1), rolled_back);
  for (int ask = 0; ask < 6; ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_TRUE(got.ok()) << "ask " << ask << ": " << got.status().ToString();
    EXPECT_EQ(*got, (Rows{{h3, "", 2}, {h3, "US", 2}})) << "ask " << ask;
  }
  // Two replicas showed it: the node takes it for the archive's rollback,
  // reads once per query from then on, and one replica down is no 503.
  const uint64_t rereads = stats_.handover_rereads.load();
  for (const char* path : {"/get", "/mget", "/manifest"}) {
    client_.Script(ReplicaPeer(0, 1), path, Answer::TransportError());
  }
  for (int ask = 0; ask < 4; ++ask) {
    const Result<Rows> got = Breakdown();
    ASSERT_TRUE(got.ok()) << "ask " << ask << " with a replica down: " << got.status().ToString();
    EXPECT_EQ(*got, (Rows{{h3, "", 2}, {h3, "US", 2}})) << "ask " << ask;
  }
  EXPECT_EQ(stats_.handover_rereads.load(), rereads);
}

// A manifest put right by hand: the same file (generation and crc32) now
// says another last day. What was kept under the old one is not used: the
// last day decides which days a query takes from realtime.
TEST_F(QueryGatherTest, AnswersKeptUnderAnotherLastDayAreNotUsed) {
  KeepAnswers(1 << 20);
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  auto file = ServeAndReadOneHour(h3, 4);
  const Result<Rows> kept = Breakdown();
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  const uint64_t hits = stats_.archive_cache_hits.load();
  ASSERT_GE(hits, 1u);
  file->last_day = "2026-12-01";  // the same file's manifest, another last day
  // Any answer of the replica tells the node (here a total of another key).
  gather_->FetchTotal("u", "other", HourSpan{kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay},
                      [](Result<TotalData>) {});
  client_.RunUntilIdle();
  const Result<Rows> again = Breakdown();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, (Rows{{h3, "", 4}, {h3, "US", 4}}));
  EXPECT_EQ(stats_.archive_cache_hits.load(), hits) << "read again, not from what was kept";
}

// A manifest that said a later last day than its file holds (an archive
// rolled back, a manifest put right by hand): the node's realtime reads
// skipped through that day. The first query that meets the true last day
// reads again with every day; the next ones skip only what the archive
// holds and are read once, not twice each until the node restarts.
TEST_F(QueryGatherTest, AnArchiveThatNowEndsEarlierLowersTheDaysRealtimeReadsSkip) {
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  auto file = ServeAndReadOneHour(h3, 4);
  file->last_day = "2026-12-01";
  ASSERT_TRUE(Breakdown().ok());
  ASSERT_EQ(realtime_->skip_through(), DaysFromCivil({2026, 12, 1}));
  file->last_day = "2026-11-30";  // put right
  const uint64_t rereads = stats_.realtime_skip_rereads.load();
  Result<Rows> got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Rows{{h3, "", 4}, {h3, "US", 4}}));
  EXPECT_EQ(stats_.realtime_skip_rereads.load(), rereads + 1) << "the first query meeting it reads every day";
  EXPECT_EQ(realtime_->skip_through(), DaysFromCivil({2026, 11, 30}));
  client_.ClearRequests();
  got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Rows{{h3, "", 4}, {h3, "US", 4}}));
  EXPECT_EQ(stats_.realtime_skip_rereads.load(), rereads + 1) << "the next one is read once";
  const std::vector<FakeHttpClient::Request> sent = client_.RequestsTo(kRealtimePeer);
  ASSERT_FALSE(sent.empty());
  for (const FakeHttpClient::Request& r : sent) {
    EXPECT_NE(r.target.find("after=2026-11-30"), std::string::npos) << r.target;
  }
}

TEST_F(QueryGatherTest, AnswersKeptFromAFileItsReplicaFoundDamagedAreNotUsedAgain) {
  // The replica's file was changed in place: the node kept what it read of
  // it (US 9). The replica then finds the damage and refuses reads, naming
  // the file (503 ARCHIVE_DAMAGED with its headers). Once the file is put
  // back as it was, under the same name (generation and crc32), the node
  // must read it again, not answer what it kept.
  KeepAnswers(1 << 20);
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  auto file = ServeAndReadOneHour(h3, 9);
  Result<Rows> got = Breakdown();  // from what was kept
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_GE(stats_.archive_cache_hits.load(), 1u);

  client_.Forget(ReplicaPeer(0, 0));
  const std::string damaged = R"({"status_code":503,"status_txt":"ARCHIVE_DAMAGED","data":null})";
  for (const char* path : {"/get", "/mget", "/manifest"}) {
    client_.Script(ReplicaPeer(0, 0), path, Answer::Http(503, damaged, file->ArchiveHeaders()));
  }
  // A read of another key, not kept, meets the refusal (and fails).
  std::optional<Status> other;
  gather_->FetchTotal("u", "other", HourSpan{kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay},
                      [&](Result<TotalData> data) { other = data.status(); });
  client_.RunUntilIdle();
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->reason(), "SHARD_UNAVAILABLE") << other->ToString();

  client_.Forget(ReplicaPeer(0, 0));
  file->records = Records({{h3, {{"US", 2}}}});  // put back: the same generation and crc32
  ServeFile(client_, ReplicaPeer(0, 0), file);
  const uint64_t hits_before = stats_.archive_cache_hits.load();
  got = Breakdown();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Rows{{h3, "", 2}, {h3, "US", 2}}));
  EXPECT_EQ(stats_.archive_cache_hits.load(), hits_before) << "nothing kept of the damaged file is read";
}

// A `load --now` brought a hashed value and its lookup record; its deploy
// has reached the value's key's shard (generation 8) and not yet the shard
// holding the lookup (still 7, without it). The breakdown read from 8 must
// not show the value as its bare hash, a mix of the two generations (a
// probe read 491 such rows during a deploy): SHARD_UNAVAILABLE, retry. A
// record the older generation has is read; a hash the data's own
// generation lacks is shown as itself; and without a data generation
// (GET /lookup) nothing is checked.
TEST_F(QueryGatherTest, ALookupFromAGenerationOlderThanItsValuesIsNoAnswer) {
  cluster_ = ArchiveCluster(2, 1);
  AddRealtimeShard(cluster_, 0, kRealtimePeer);
  KeepAnswers(0);
  client_.Script(kRealtimePeer, "/mget", Answer::Http(200, ""));  // realtime holds no lookup
  // Two hashes whose lookup records are on shard 1.
  std::vector<std::string> hashes;
  for (int n = 0; hashes.size() < 2; ++n) {
    const std::string hash = Hash12(fmt::format("https://new.example/{}", n));
    if (ArchiveReader::ShardFor(hash, 2) == 1) hashes.push_back(hash);
  }
  std::vector<std::shared_ptr<ServedFileState>> files;
  for (int shard = 0; shard < 2; ++shard) {
    auto file = std::make_shared<ServedFileState>();
    file->shard_count = 2;
    file->crc32 = 7000 + shard;
    ServeFile(client_, ReplicaPeer(shard, 0), file);
    files.push_back(file);
  }
  files[1]->records["l|" + hashes[0]] = "https://old.example/kept";  // generation 7 has the first
  const auto resolve = [&](uint64_t data_generation) {
    std::optional<Result<std::map<std::string, std::string>>> got;
    gather_->ResolveHashes(
        hashes, [&](Result<std::map<std::string, std::string>> values) { got.emplace(std::move(values)); },
        data_generation);
    client_.RunUntilIdle();
    EXPECT_TRUE(got.has_value());
    return got ? *got : Result<std::map<std::string, std::string>>(Status::Internal("no answer"));
  };
  Result<std::map<std::string, std::string>> got = resolve(8);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().reason(), "SHARD_UNAVAILABLE") << got.status().ToString();
  EXPECT_NE(got.status().message().find(hashes[1]), std::string::npos) << got.status().ToString();
  EXPECT_NE(got.status().message().find("generation 7"), std::string::npos) << got.status().ToString();
  // GET /lookup names no generation: the record it has, none for the other.
  got = resolve(0);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::map<std::string, std::string>{{hashes[0], "https://old.example/kept"}}));
  // The deploy reaches shard 1: the same answer from generation 8 is whole.
  files[1]->generation = 8;
  files[1]->crc32 = 8001;
  got = resolve(8);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::map<std::string, std::string>{{hashes[0], "https://old.example/kept"}}));
}

// Lowering the archive shard count (3 to 2): generation 13 is cut into 2
// shards and deployed; the dropped shard's replica still runs (the
// procedure stops it only after the API nodes have the new file) and serves
// generation 12, cut into 3. A node that routed by 3 asks it for "u|k"
// (shard 2 of 3, shard 1 of 2). Realtime says 13 is deployed: the answer of
// 12 is read again, by the deployed generation's count, not taken for a
// rollback and answered stale.
TEST(QueryGatherRepartitionTest, AnAnswerFromADroppedShardIsReadAgainByTheDeployedCount) {
  ASSERT_EQ(ShardOf("u|k", 3), 2u);
  ASSERT_EQ(ShardOf("u|k", 2), 1u);
  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  FakeHttpClient client{base.get()};
  ReadStats stats;
  ReadCache cache{0};
  LookupCache lookups{cache};
  ClusterConfig cluster = ArchiveCluster(3, 1);
  AddRealtimeShard(cluster, 0, kRealtimePeer);
  const int64_t h3 = kDay * kSecondsPerDay + 3 * kHour;
  std::vector<std::shared_ptr<ServedFileState>> files;
  for (int shard = 0; shard < 3; ++shard) {
    auto file = std::make_shared<ServedFileState>();
    file->generation = 12;
    file->crc32 = 1200 + shard;
    file->shard_count = 3;
    if (shard == 2) file->records = Records({{h3, {{"US", 5}}}});
    ServeFile(client, ReplicaPeer(shard, 0), file);
    files.push_back(file);
  }
  client.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, ""));
  client.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, ""));
  auto known = std::make_shared<KnownGeneration>(std::string());
  ArchiveReader::Options options;
  options.known_generation = known;
  ArchiveReader archive(cluster, client, stats, options);
  CachedArchiveReader archive_reads(archive, nullptr, stats);
  RealtimeReader realtime(cluster, client, stats, RealtimeReader::Options{.known_generation = known});
  QueryGather gather(cluster, archive_reads, realtime, lookups, stats);
  const auto total = [&]() -> int64_t {
    std::optional<Result<TotalData>> got;
    gather.FetchTotal("u", "k", HourSpan{kDay * kSecondsPerDay, (kDay + 1) * kSecondsPerDay},
                      [&](Result<TotalData> data) { got.emplace(std::move(data)); });
    client.RunUntilIdle();
    EXPECT_TRUE(got.has_value() && got->ok()) << (got ? got->status().ToString() : "no answer");
    if (!got || !got->ok()) return -1;
    int64_t sum = 0;
    for (const auto& [hour, count] : (*got)->hours) sum += count;
    return sum;
  };
  EXPECT_EQ(total(), 5);

  // Generation 13, cut into 2: "u|k" on shard 1, with 2 late clicks more.
  for (int shard = 0; shard < 2; ++shard) {
    files[static_cast<size_t>(shard)]->generation = 13;
    files[static_cast<size_t>(shard)]->crc32 = 1300 + shard;
    files[static_cast<size_t>(shard)]->shard_count = 2;
    files[static_cast<size_t>(shard)]->records.clear();
  }
  files[1]->records = Records({{h3, {{"US", 7}}}});
  client.Forget(kRealtimePeer);
  const std::vector<std::pair<std::string, std::string>> told = {{"X-Realtime-Archive-Generation", "13"},
                                                                  {"X-Realtime-Archived-Through", "2026-11-30"}};
  client.Script(kRealtimePeer, "/fwmatch", Answer::Http(200, "", told));
  client.Script(kRealtimePeer, "/mfwmatch", Answer::Http(200, "", told));
  realtime.FwmatchKey("u|k", "u|k.", [](Result<std::string>) {});  // the node hears of 13 from realtime
  client.RunUntilIdle();
  EXPECT_EQ(total(), 7);
  EXPECT_EQ(archive.ShardCount(), 2);
}

}  // namespace
}  // namespace clickatron::api::query_gather_test

// Realtime <-> archive conversion and combining.
#include "clickatron/convert.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "clickatron/key_codec.h"

namespace clickatron {
namespace {

// The rebuild's pipeline in miniature: convert, sort whole lines, combine.
std::vector<std::string> Pipeline(const std::vector<std::string>& realtime_lines) {
  std::vector<std::string> archive;
  for (const std::string& line : realtime_lines) {
    Result<std::string> converted = RealtimeToArchiveLine(line);
    EXPECT_TRUE(converted.ok()) << line << ": " << converted.status().ToString();
    if (converted.ok()) archive.push_back(*converted);
  }
  return archive;
}

std::vector<std::string> SortAndCombine(std::vector<std::string> archive_lines) {
  std::sort(archive_lines.begin(), archive_lines.end());
  std::vector<std::string> out;
  ArchiveCombiner combiner([&](std::string_view line) {
    out.emplace_back(line);
    return Status::Ok();
  });
  for (const std::string& line : archive_lines) {
    Status st = combiner.Add(line);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  EXPECT_TRUE(combiner.Finish().ok());
  EXPECT_EQ(combiner.lines_in(), archive_lines.size());
  EXPECT_EQ(combiner.records_out(), out.size());
  return out;
}

std::vector<std::string> ToRealtime(const std::vector<std::string>& archive_lines) {
  std::vector<std::string> out;
  for (const std::string& line : archive_lines) {
    Status st = ArchiveToRealtimeLines(line, &out);
    EXPECT_TRUE(st.ok()) << line << ": " << st.ToString();
  }
  std::sort(out.begin(), out.end());
  return out;
}

ArchiveRecord MustParse(std::string_view line) {
  Result<ArchiveRecord> r = ParseArchiveLine(line);
  EXPECT_TRUE(r.ok()) << line << ": " << r.status().ToString();
  return r.ok() ? *r : ArchiveRecord{};
}

TEST(RealtimeToArchive, OneLineEach) {
  EXPECT_EQ(*RealtimeToArchiveLine("u|jehiah.c41l,5"), "u|jehiah,c41l:5");
  EXPECT_EQ(*RealtimeToArchiveLine("c.u|jehiah.US.c41l,4"), "c.u|jehiah.c41l,US:4");
  EXPECT_EQ(*RealtimeToArchiveLine("r.u|jehiah.h0aMB8AuNw4=.c41l,-2"),
            "r.u|jehiah.c41l,h0aMB8AuNw4=:-2");
  EXPECT_EQ(*RealtimeToArchiveLine("l|h0aMB8AuNw4=,http://www.facebook.com/"),
            "l|h0aMB8AuNw4=,http://www.facebook.com/");
  for (std::string_view bad : {"u|jehiah,c41l:5", "u|jehiah.c41l", "u|jehiah.c41l,x", ""}) {
    EXPECT_FALSE(RealtimeToArchiveLine(bad).ok()) << bad;
  }
}

TEST(RealtimeToArchive, SeedExample) {
  // The seed's two total records and four subtotal records...
  const std::vector<std::string> realtime = {
      "u|jehiah.c413,2",          "u|jehiah.c41l,5",
      "c.u|jehiah.US.c41l,4",     "c.u|jehiah.JP.c41l,1",
      "r.u|jehiah.5bmehgOB4+w=.c41l,3", "r.u|jehiah.h0aMB8AuNw4=.c41l,2",
  };
  // ...become the seed's three archive records (subtotal columns by skey, as
  // the design sorts them; lines in LC_ALL=C order).
  EXPECT_EQ(SortAndCombine(Pipeline(realtime)), (std::vector<std::string>{
                                                    "c.u|jehiah.c41l,JP:1 US:4",
                                                    "r.u|jehiah.c41l,5bmehgOB4+w=:3 h0aMB8AuNw4=:2",
                                                    "u|jehiah,c413:2 c41l:5",
                                                }));
}

TEST(ArchiveToRealtime, ExpandsColumnsAndAppends) {
  std::vector<std::string> out = {"existing"};
  ASSERT_TRUE(ArchiveToRealtimeLines("u|jehiah,c413:2 c41l:5", &out).ok());
  ASSERT_TRUE(ArchiveToRealtimeLines("c.u|jehiah.c41l,JP:1 US:4", &out).ok());
  // A day subtotal only sums its hours: converting it too would count them twice.
  ASSERT_TRUE(ArchiveToRealtimeLines("c.u|jehiah.c41,JP:1 US:4", &out).ok());
  ASSERT_TRUE(ArchiveToRealtimeLines("l|h0aMB8AuNw4=,http://www.facebook.com/", &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{
                     "existing",
                     "u|jehiah.c413,2",
                     "u|jehiah.c41l,5",
                     "c.u|jehiah.JP.c41l,1",
                     "c.u|jehiah.US.c41l,4",
                     "l|h0aMB8AuNw4=,http://www.facebook.com/",
                 }));
  EXPECT_FALSE(ArchiveToRealtimeLines("u|jehiah,c41l:5 c413:2", &out).ok());
  EXPECT_FALSE(ArchiveToRealtimeLines("u|jehiah.c41l,5", &out).ok());
}

TEST(CombineArchiveRecords, UnionsAndSums) {
  ArchiveRecord into = MustParse("u|jehiah,c413:2 c41l:5");
  ASSERT_TRUE(CombineArchiveRecords(&into, MustParse("u|jehiah,c410:1 c41l:-1 c510:7")).ok());
  EXPECT_EQ(FormatArchiveLine(into), "u|jehiah,c410:1 c413:2 c41l:4 c510:7");
  ArchiveRecord sub = MustParse("c.u|jehiah.c41l,US:4");
  ASSERT_TRUE(CombineArchiveRecords(&sub, MustParse("c.u|jehiah.c41l,JP:1 US:1")).ok());
  EXPECT_EQ(FormatArchiveLine(sub), "c.u|jehiah.c41l,JP:1 US:5");
}

TEST(CombineArchiveRecords, Errors) {
  ArchiveRecord into = MustParse("u|jehiah,c41l:5");
  EXPECT_EQ(CombineArchiveRecords(&into, MustParse("u|other,c41l:5")).code(),
            StatusCode::kInvalidArgument);

  ArchiveRecord big = MustParse("u|jehiah,c413:1 c41l:9223372036854775807");
  Status overflow = CombineArchiveRecords(&big, MustParse("u|jehiah,c413:1 c41l:1"));
  EXPECT_EQ(overflow.code(), StatusCode::kOutOfRange);
  EXPECT_NE(overflow.message().find("c41l"), std::string::npos) << overflow.message();
  EXPECT_EQ(FormatArchiveLine(big), "u|jehiah,c413:1 c41l:9223372036854775807");  // untouched

  ArchiveRecord lookup = MustParse("l|h0aMB8AuNw4=,http://www.facebook.com/");
  EXPECT_TRUE(CombineArchiveRecords(&lookup, lookup).ok());
  ArchiveRecord other = lookup;
  other.lookup_value = "something else";
  EXPECT_EQ(CombineArchiveRecords(&lookup, other).code(), StatusCode::kCorruption);

  // Hand-built records with unsorted columns are refused, not merged wrongly.
  ArchiveRecord unsorted;
  unsorted.key = "u|jehiah";
  unsorted.columns = {{"c41l", 1}, {"c413", 1}};
  ArchiveRecord target = MustParse("u|jehiah,c410:1");
  EXPECT_FALSE(CombineArchiveRecords(&target, unsorted).ok());
}

TEST(ArchiveCombiner, OutOfOrderNamesBothKeys) {
  ArchiveCombiner combiner([](std::string_view) { return Status::Ok(); });
  ASSERT_TRUE(combiner.Add("u|b,c41l:1").ok());
  Status st = combiner.Add("u|a,c41l:1");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("u|a"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("u|b"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("line 2"), std::string::npos) << st.message();
}

TEST(ArchiveCombiner, FollowsWholeLineOrderAtPrefixes) {
  // LC_ALL=C sort puts "u|a!,…" before "u|a,…" before "u|a-,…".
  std::vector<std::string> out;
  ArchiveCombiner combiner([&](std::string_view line) {
    out.emplace_back(line);
    return Status::Ok();
  });
  for (std::string_view line : {"u|a!,c41l:1", "u|a,c413:1", "u|a,c41l:2", "u|a-,c41l:3"}) {
    ASSERT_TRUE(combiner.Add(line).ok()) << line;
  }
  ASSERT_TRUE(combiner.Finish().ok());
  EXPECT_EQ(out, (std::vector<std::string>{"u|a!,c41l:1", "u|a,c413:1 c41l:2", "u|a-,c41l:3"}));
  EXPECT_EQ(combiner.lines_in(), 4u);
  EXPECT_EQ(combiner.records_out(), 3u);

  ArchiveCombiner wrong([](std::string_view) { return Status::Ok(); });
  ASSERT_TRUE(wrong.Add("u|a,c41l:1").ok());
  EXPECT_FALSE(wrong.Add("u|a!,c41l:1").ok());
}

TEST(ArchiveCombiner, ErrorsCarryLineNumbersAndSinkFailures) {
  ArchiveCombiner combiner([](std::string_view) { return Status::IoError("disk full"); });
  ASSERT_TRUE(combiner.Add("u|a,c41l:1").ok());
  Status bad = combiner.Add("u|b,c41l:x");
  EXPECT_NE(bad.message().find("line 2"), std::string::npos) << bad.message();
  EXPECT_EQ(combiner.Add("u|b,c41l:1").code(), StatusCode::kIoError);  // flushing u|a fails

  ArchiveCombiner overflow([](std::string_view) { return Status::Ok(); });
  ASSERT_TRUE(overflow.Add("u|a,c41l:9223372036854775800").ok());
  EXPECT_EQ(overflow.Add("u|a,c41l:8").code(), StatusCode::kOutOfRange);

  ArchiveCombiner empty([](std::string_view) { return Status::Internal("must not be called"); });
  EXPECT_TRUE(empty.Finish().ok());
  EXPECT_EQ(empty.records_out(), 0u);
}

// A random set of realtime records with unique keys, and the archive lines it
// must become, computed here with maps and string formatting only.
struct RandomData {
  std::vector<std::string> realtime;  // sorted, unique keys
  std::vector<std::string> archive;   // sorted
};

RandomData MakeRandomData(std::mt19937& rng) {
  const std::vector<std::string> hours = {"c413", "c41l", "c3p1", "c3p2", "0110", "vcvn"};
  const std::vector<std::string> ns_pool = {"u", "g", "a-b", "Z_9"};
  const std::vector<std::string> sns_pool = {"c", "r", "x"};
  const std::vector<std::string> raw_keys = {
      "jehiah", "a", "a!", "a-", "US", "JP", "http://www.facebook.com/", "a b", "\xc3\xa9t\xc3\xa9",
      "12345678901", "123456789012", "x.y", "k|v", "https://bitly.com/"};
  std::uniform_int_distribution<int64_t> count(-5, 1000);
  std::map<std::string, int64_t> realtime;                      // key -> count
  std::map<std::string, std::string> lookups;                   // hash -> value
  std::map<std::string, std::map<std::string, int64_t>> archive;  // key -> column -> count
  const auto stored = [&](const std::string& raw) {
    StoredKeyPart part = StoreKeyPart(raw);
    if (part.hashed) lookups[part.stored] = raw;
    return part.stored;
  };
  const int n = 1 + static_cast<int>(rng() % 60);
  for (int i = 0; i < n; ++i) {
    const std::string& ns = ns_pool[rng() % ns_pool.size()];
    const std::string tkey = stored(raw_keys[rng() % raw_keys.size()]);
    const std::string& hour = hours[rng() % hours.size()];
    const int64_t c = count(rng);
    if (realtime.emplace(fmt::format("{}|{}.{}", ns, tkey, hour), c).second) {
      archive[ns + "|" + tkey][hour] += c;
    }
    for (const std::string& sns : sns_pool) {
      if (rng() % 2) continue;
      const std::string skey = stored(raw_keys[rng() % raw_keys.size()]);
      const int64_t sc = count(rng);
      if (realtime.emplace(fmt::format("{}.{}|{}.{}.{}", sns, ns, tkey, skey, hour), sc).second) {
        archive[fmt::format("{}.{}|{}.{}", sns, ns, tkey, hour)][skey] += sc;
      }
    }
  }
  RandomData data;
  for (const auto& [key, c] : realtime) data.realtime.push_back(fmt::format("{},{}", key, c));
  for (const auto& [hash, value] : lookups) {
    data.realtime.push_back(fmt::format("l|{},{}", hash, value));
    data.archive.push_back(fmt::format("l|{},{}", hash, value));
  }
  for (const auto& [key, columns] : archive) {
    std::string line = key + ",";
    for (const auto& [name, c] : columns) {  // std::map: bytewise name order
      if (line.back() != ',') line += ' ';
      line += fmt::format("{}:{}", name, c);
    }
    data.archive.push_back(line);
  }
  std::sort(data.realtime.begin(), data.realtime.end());
  std::sort(data.archive.begin(), data.archive.end());
  return data;
}

TEST(ConvertProperty, RealtimeArchiveRealtimeRoundTrip) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 300; ++round) {
    RandomData data = MakeRandomData(rng);
    std::vector<std::string> shuffled = data.realtime;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const std::vector<std::string> archive = SortAndCombine(Pipeline(shuffled));
    ASSERT_EQ(archive, data.archive) << "round " << round;
    for (const std::string& line : archive) ASSERT_TRUE(ParseArchiveLine(line).ok()) << line;
    ASSERT_EQ(ToRealtime(archive), data.realtime) << "round " << round;
  }
}

TEST(ConvertProperty, CombiningIsOrderAndGroupingIndependent) {
  // Split every count across random chunks (as daily exports and archive
  // generations split them), combine each chunk on its own, then merge the
  // generations: the result must equal the one-pass answer.
  std::mt19937 rng(99);
  for (int round = 0; round < 200; ++round) {
    RandomData data = MakeRandomData(rng);
    const size_t chunks = 1 + rng() % 4;
    std::vector<std::vector<std::string>> parts(chunks);
    for (const std::string& line : data.realtime) {
      Result<RealtimeLine> parsed = ParseRealtimeLine(line);
      ASSERT_TRUE(parsed.ok());
      if (parsed->key.type == RecordType::kLookup) {
        parts[rng() % chunks].push_back(line);  // a lookup may also repeat
        if (rng() % 3 == 0) parts[rng() % chunks].push_back(line);
        continue;
      }
      const int64_t first = static_cast<int64_t>(rng() % 2000) - 1000;
      RealtimeLine a = *parsed, b = *parsed;
      a.count = first;
      b.count = parsed->count - first;
      parts[rng() % chunks].push_back(FormatRealtimeLine(a));
      parts[rng() % chunks].push_back(FormatRealtimeLine(b));
    }
    std::vector<std::string> generations;
    for (auto& part : parts) {
      std::shuffle(part.begin(), part.end(), rng);
      for (const std::string& line : SortAndCombine(Pipeline(part))) generations.push_back(line);
    }
    std::shuffle(generations.begin(), generations.end(), rng);
    ASSERT_EQ(SortAndCombine(generations), data.archive) << "round " << round;
  }
}

}  // namespace
}  // namespace clickatron

// The fast realtime->archive conversion must accept, reject and write exactly
// what the core's RealtimeToArchiveLine does: checked line by line on valid
// lines of every shape and on many damaged variants of them.
#include "convert_line.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "clickatron/convert.h"
#include "clickatron/key_codec.h"
#include "clickatron/record.h"

namespace clickatron::rebuild {
namespace {

// A counter line the core converts whose count the rebuild refuses: zero or
// less, or over 10^15.
bool BadCount(const std::string& line) {
  Result<RealtimeLine> parsed = ParseRealtimeLine(line);
  if (!parsed.ok() || (parsed->key.type != RecordType::kTotal && parsed->key.type != RecordType::kSubtotal)) {
    return false;
  }
  return parsed->count <= 0 || parsed->count > 1'000'000'000'000'000;
}

void ExpectSameAsCore(const std::string& line) {
  std::string fast = "prefix:";
  const Status st = ConvertRealtimeLine(line, &fast);
  const Result<std::string> core = RealtimeToArchiveLine(line);
  if (core.ok() && BadCount(line)) {
    EXPECT_EQ(st.reason(), "BAD_COUNT") << QuoteForMessage(line) << " " << st.ToString();
    EXPECT_EQ(fast, "prefix:") << "output must be unchanged on error";
    return;
  }
  ASSERT_EQ(st.ok(), core.ok()) << "line " << QuoteForMessage(line) << " fast: " << st.ToString()
                                << " core: " << core.status().ToString();
  if (core.ok()) {
    EXPECT_EQ(fast, "prefix:" + *core) << QuoteForMessage(line);
  } else {
    EXPECT_EQ(fast, "prefix:") << "output must be unchanged on error";
    EXPECT_EQ(st.message(), core.status().message());
  }
}

TEST(ConvertRealtimeLine, KnownLines) {
  std::string out;
  ASSERT_TRUE(ConvertRealtimeLine("u|jehiah.c41l,5", &out).ok());
  EXPECT_EQ(out, "u|jehiah,c41l:5");
  out.clear();
  ASSERT_TRUE(ConvertRealtimeLine("c.u|jehiah.US.c41l,4", &out).ok());
  EXPECT_EQ(out, "c.u|jehiah.c41l,US:4");
  out.clear();
  ASSERT_TRUE(ConvertRealtimeLine("r.u|jehiah.h0aMB8AuNw4=.c41l,2", &out).ok());
  EXPECT_EQ(out, "r.u|jehiah.c41l,h0aMB8AuNw4=:2");
  out.clear();
  ASSERT_TRUE(ConvertRealtimeLine("l|h0aMB8AuNw4=,http://www.facebook.com/", &out).ok());
  EXPECT_EQ(out, "l|h0aMB8AuNw4=,http://www.facebook.com/");
}

TEST(ConvertRealtimeLine, CountsMustBePositiveAndBounded) {
  for (const char* line : {"u|jehiah.c41l,-7", "u|jehiah.c41l,0", "u|jehiah.c41l,-0", "c.u|jehiah.US.c41l,-2",
                           "u|jehiah.c41l,1000000000000001", "u|jehiah.c41l,9000000000000000000"}) {
    std::string out;
    const Status st = ConvertRealtimeLine(line, &out);
    EXPECT_EQ(st.reason(), "BAD_COUNT") << line << " " << st.ToString();
    // The refusal quotes its line, as the parser's own refusals do.
    EXPECT_NE(st.message().find(fmt::format("realtime line \"{}\"", line)), std::string::npos) << st.ToString();
    EXPECT_TRUE(out.empty());
  }
  std::string out;
  EXPECT_TRUE(ConvertRealtimeLine("u|jehiah.c41l,1000000000000000", &out).ok());
  for (const char* line : {"u|jehiah,c41l:-3", "u|jehiah,c413:2 c41l:0", "c.u|jehiah.c41l,US:-1",
                           "u|jehiah,c41l:1000000000000001"}) {
    std::string normalized;
    const Status st = NormalizeArchiveLine(line, &normalized);
    EXPECT_EQ(st.reason(), "BAD_COUNT") << line << " " << st.ToString();
    EXPECT_NE(st.message().find(fmt::format("archive line \"{}\"", line)), std::string::npos) << st.ToString();
    EXPECT_TRUE(normalized.empty());
  }
}

TEST(ConvertRealtimeLine, AgreesWithCoreOnEdgeCases) {
  for (const char* line : {
           "u|jehiah.c41l,5", "u|jehiah.c41l,-0", "u|jehiah.c41l,007", "u|jehiah.c41l,+5",
           "u|jehiah.c41l,9223372036854775807", "u|jehiah.c41l,9223372036854775808",
           "u|jehiah.c41l,", "u|jehiah.c41l", "u|jehiah.c41l,5,6", "u|jehiah.c41l,5 ",
           "u|jehiah.c2u0,1",    // Feb 30th: no such hour
           "u|jehiah.c2t0,1",    // Feb 29th 2012: a leap day
           "u|jehiah.b2t0,1",    // Feb 29th 2011: no such day
           "u|jehiah.c41o,1",    // hour 24
           "u|jehiah.c4100,1", "u|jehiah.C41l,1", "u|jehiah.w41l,1",
           "l|jehiah.c41l,1", "l.u|a.b.c41l,1", "u.l|a.b.c41l,1", "u|a|b.c41l,1",
           "|a.c41l,1", "u|.c41l,1", "u|a..c41l,1", "u|a.b.c41l,1", "c.u|a.c41l,1",
           "c.u|a.b.c.c41l,1", "c.u|a..c41l,1", "toolongns|a.c41l,1", "12345678|a.c41l,1",
           "u_-9|a.c41l,1", "u|abcdefghijk.c41l,1", "u|abcdefghijkl.c41l,1",
           "u|h0aMB8AuNw4=.c41l,1", "u|h0aMB8AuNw4.c41l,1", "u|h0aMB8AuNw4=x.c41l,1",
           "u|a b.c41l,1", "u|a:b.c41l,1", "u|a\tb.c41l,1", "u|a\x7f.c41l,1",
           "u|caf\xc3\xa9.c41l,1", "u|caf\xc3.c41l,1", "u|\xff.c41l,1",
           "c.u|a.US.c41l,3", "c.u|a.h0aMB8AuNw4=.c41l,3", "c.u|a.U,S.c41l,3",
           "l|h0aMB8AuNw4=,http://www.facebook.com/", "l|h0aMB8AuNw4=,wrong value",
           "l|short,x", ",", "", "no comma at all",
       }) {
    ExpectSameAsCore(line);
  }
}

TEST(ConvertRealtimeLine, AgreesWithCoreOnRandomDamage) {
  std::mt19937 rng(7);
  const std::vector<std::string> seeds = {
      "u|jehiah.c41l,5", "c.u|jehiah.US.c41l,4", "r.u|x.h0aMB8AuNw4=.c3p1,12",
      "l|h0aMB8AuNw4=,http://www.facebook.com/", "abc-_9|k~!@#$%^&*.c1c3,-77"};
  const std::string alphabet = std::string("|.,:= -_09azAZv\x01\x7f\xc3\xa9", 20);
  int checked = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string line = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const size_t at = rng() % line.size();
      switch (rng() % 3) {
        case 0: line[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: line.erase(at, 1); break;
        default: line.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    ExpectSameAsCore(line);
    ++checked;
  }
  EXPECT_EQ(checked, 20000);
}

TEST(NormalizeArchiveLine, CanonicalFormOrError) {
  std::string out;
  ASSERT_TRUE(NormalizeArchiveLine("u|jehiah,c413:2 c41l:05", &out).ok());
  EXPECT_EQ(out, "u|jehiah,c413:2 c41l:5");
  out.clear();
  EXPECT_FALSE(NormalizeArchiveLine("u|jehiah,c41l:5 c413:2", &out).ok());  // columns unsorted
  EXPECT_FALSE(NormalizeArchiveLine("u|jehiah.c41l,5", &out).ok());         // realtime format
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace clickatron::rebuild

// Record formats: realtime and archive keys and lines, counts, key order.
#include "clickatron/record.h"
#include "clickatron/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "clickatron/key_codec.h"

namespace clickatron {
namespace {

RealtimeKey MustParseRealtimeKey(std::string_view key) {
  Result<RealtimeKey> r = ParseRealtimeKey(key);
  EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  return r.ok() ? *r : RealtimeKey{};
}

TEST(RealtimeKey, SeedTotal) {
  RealtimeKey k = MustParseRealtimeKey("u|jehiah.c41l");
  EXPECT_EQ(k.type, RecordType::kTotal);
  EXPECT_EQ(k.ns, "u");
  EXPECT_EQ(k.tkey, "jehiah");
  EXPECT_EQ(k.ymdh, "c41l");
  EXPECT_EQ(FormatRealtimeKey(k), "u|jehiah.c41l");
}

TEST(RealtimeKey, SeedSubtotals) {
  RealtimeKey k = MustParseRealtimeKey("c.u|jehiah.US.c41l");
  EXPECT_EQ(k.type, RecordType::kSubtotal);
  EXPECT_EQ(k.sns, "c");
  EXPECT_EQ(k.ns, "u");
  EXPECT_EQ(k.tkey, "jehiah");
  EXPECT_EQ(k.skey, "US");
  EXPECT_EQ(k.ymdh, "c41l");
  EXPECT_EQ(FormatRealtimeKey(k), "c.u|jehiah.US.c41l");
  RealtimeKey r = MustParseRealtimeKey("r.u|jehiah.5bmehgOB4+w=.c41l");
  EXPECT_EQ(r.skey, "5bmehgOB4+w=");
  EXPECT_EQ(FormatRealtimeKey(r), "r.u|jehiah.5bmehgOB4+w=.c41l");
}

TEST(RealtimeKey, Lookup) {
  RealtimeKey k = MustParseRealtimeKey("l|h0aMB8AuNw4=");
  EXPECT_EQ(k.type, RecordType::kLookup);
  EXPECT_EQ(k.tkey, "h0aMB8AuNw4=");
  EXPECT_EQ(FormatRealtimeKey(k), "l|h0aMB8AuNw4=");
}

TEST(RealtimeKey, Rejections) {
  for (std::string_view bad : {
           "", "jehiah.c41l", "u|jehiah", "u|jehiah.c41l.x", "u||jehiah.c41l", "u|jeh|iah.c41l",
           "|jehiah.c41l",               // empty ns
           "123456789|jehiah.c41l",      // ns too long
           "u!|jehiah.c41l",             // ns character
           "l|jehiah.c41l",              // l is the lookup namespace
           "l.u|jehiah.US.c41l",         // ... also as sns
           "c.l|jehiah.US.c41l",         // ... and as ns of a subtotal
           "c.u.x|jehiah.US.c41l",       // three namespaces
           "u|jehiah.c41w", "u|jehiah.c4lo", "u|jehiah.C41L", "u|jehiah.c2u0", "u|jehiah.c41",
           "u|.c41l",                    // empty tkey
           "c.u|jehiah..c41l",           // empty skey
           "c.u|jehiah.c41l",            // a subtotal needs a skey (that is an archive key)
           "u|jeh iah.c41l", "u|jeh:iah.c41l", "c.u|jehiah.U S.c41l", "u|jeh\niah.c41l",
           "u|123456789012.c41l",        // 12 bytes but not a hash
           "u|h0aMB8AuNw4==.c41l",       // hash-like, 13 bytes
           "c.u|jehiah.h0aMB8AuNw4x.c41l",
           "l|h0aMB8AuNw4", "l|h0aMB8AuNw4x", "l|", "l|h0aMB8Au.w4=",
           "u|jehiah.c41l,5",            // a line, not a key
       }) {
    Result<RealtimeKey> r = ParseRealtimeKey(bad);
    EXPECT_FALSE(r.ok()) << "accepted " << QuoteForMessage(bad);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(RealtimeKey, ErrorsNameKeyAndPart) {
  Result<RealtimeKey> r = ParseRealtimeKey("c.u|jehiah.U S.c41l");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("c.u|jehiah.U S.c41l"), std::string::npos);
  EXPECT_NE(r.status().message().find("skey"), std::string::npos) << r.status().message();
}

TEST(RealtimeLine, Counts) {
  Result<RealtimeLine> line = ParseRealtimeLine("u|jehiah.c41l,5");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(line->count, 5);
  EXPECT_EQ(FormatRealtimeLine(*line), "u|jehiah.c41l,5");
  Result<RealtimeLine> negative = ParseRealtimeLine("c.u|jehiah.US.c41l,-4");
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->count, -4);
  EXPECT_EQ(FormatRealtimeLine(*negative), "c.u|jehiah.US.c41l,-4");
  for (std::string_view bad :
       {"u|jehiah.c41l", "u|jehiah.c41l,", "u|jehiah.c41l,+5", "u|jehiah.c41l, 5",
        "u|jehiah.c41l,5 ", "u|jehiah.c41l,5,6", "u|jehiah.c41l,0x5", "u|jehiah.c41l,5.0",
        "u|jehiah.c41l,9223372036854775808", "u|jehiah.c41l,-9223372036854775809",
        "u|jehiah.c41l,-", "u|jehiah.c41l:5", "u|jehiah.c41w,5"}) {
    EXPECT_FALSE(ParseRealtimeLine(bad).ok()) << "accepted " << bad;
  }
  Result<RealtimeLine> max = ParseRealtimeLine("u|jehiah.c41l,9223372036854775807");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max->count, INT64_MAX);
  Result<RealtimeLine> min = ParseRealtimeLine("u|jehiah.c41l,-9223372036854775808");
  ASSERT_TRUE(min.ok());
  EXPECT_EQ(min->count, INT64_MIN);
}

TEST(RealtimeLine, LookupValuesMayHoldCommas) {
  // Hashes from python3: base64.b64encode(hashlib.md5(v).digest()[:8]).
  Result<RealtimeLine> line = ParseRealtimeLine("l|sPo3cTK5ytM=,http://example.com/?a=1,2");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(line->key.type, RecordType::kLookup);
  EXPECT_EQ(line->key.tkey, "sPo3cTK5ytM=");
  EXPECT_EQ(line->lookup_value, "http://example.com/?a=1,2");
  EXPECT_EQ(FormatRealtimeLine(*line), "l|sPo3cTK5ytM=,http://example.com/?a=1,2");
  EXPECT_TRUE(ParseRealtimeLine("l|8QvDyUt34dY=,x,y").ok());
  EXPECT_TRUE(ParseRealtimeLine("l|h0aMB8AuNw4=,http://www.facebook.com/").ok());
}

TEST(RealtimeLine, LookupValueMustMatchItsHash) {
  Result<RealtimeLine> wrong = ParseRealtimeLine("l|h0aMB8AuNw4=,http://www.facebook.com");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("hashes to"), std::string::npos)
      << wrong.status().message();
  EXPECT_FALSE(ParseRealtimeLine("l|1B2M2Y8AsgQ=,").ok());  // empty value (hash of "")
  EXPECT_FALSE(ParseRealtimeLine("l|h0aMB8AuNw4=").ok());    // no value at all
}

TEST(ParseCount, Rules) {
  EXPECT_EQ(*ParseCount("0"), 0);
  EXPECT_EQ(*ParseCount("-17"), -17);
  EXPECT_EQ(*ParseCount("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseCount("9223372036854775808").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseCount("99999999999999999999999").status().code(), StatusCode::kOutOfRange);
  for (std::string_view bad : {"", "+1", " 1", "1 ", "1a", "a", "-", "--1", "1e3", "0x1"}) {
    EXPECT_FALSE(ParseCount(bad).ok()) << bad;
  }
}

TEST(AddCount, DetectsOverflow) {
  int64_t sum = INT64_MAX - 1;
  EXPECT_TRUE(AddCount(&sum, 1).ok());
  EXPECT_EQ(sum, INT64_MAX);
  Status st = AddCount(&sum, 1);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(sum, INT64_MAX);  // untouched on error
  sum = INT64_MIN;
  EXPECT_FALSE(AddCount(&sum, -1).ok());
  EXPECT_TRUE(AddCount(&sum, INT64_MAX).ok());
  EXPECT_EQ(sum, -1);
}

TEST(ArchiveLine, SeedTotal) {
  Result<ArchiveRecord> r = ParseArchiveLine("u|jehiah,c413:2 c41l:5");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, RecordType::kTotal);
  EXPECT_EQ(r->key, "u|jehiah");
  EXPECT_EQ(r->columns, (std::vector<ArchiveColumn>{{"c413", 2}, {"c41l", 5}}));
  EXPECT_EQ(FormatArchiveLine(*r), "u|jehiah,c413:2 c41l:5");
}

TEST(ArchiveLine, SeedSubtotals) {
  Result<ArchiveRecord> c = ParseArchiveLine("c.u|jehiah.c41l,JP:1 US:4");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->type, RecordType::kSubtotal);
  EXPECT_EQ(c->key, "c.u|jehiah.c41l");
  EXPECT_EQ(c->columns, (std::vector<ArchiveColumn>{{"JP", 1}, {"US", 4}}));
  Result<ArchiveRecord> r = ParseArchiveLine("r.u|jehiah.c41l,5bmehgOB4+w=:3 h0aMB8AuNw4=:2");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->columns,
            (std::vector<ArchiveColumn>{{"5bmehgOB4+w=", 3}, {"h0aMB8AuNw4=", 2}}));
  // The seed prints "US:4 JP:1"; the design sorts subtotal columns by skey.
  Result<ArchiveRecord> unsorted = ParseArchiveLine("c.u|jehiah.c41l,US:4 JP:1");
  ASSERT_FALSE(unsorted.ok());
  EXPECT_NE(unsorted.status().message().find("out of order"), std::string::npos)
      << unsorted.status().message();
}

TEST(ArchiveLine, DaySubtotals) {
  Result<ArchiveRecord> d = ParseArchiveLine("c.u|jehiah.c41,JP:3 US:9");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->type, RecordType::kDaySubtotal);
  EXPECT_EQ(d->columns, (std::vector<ArchiveColumn>{{"JP", 3}, {"US", 9}}));
  EXPECT_EQ(FormatArchiveLine(*d), "c.u|jehiah.c41,JP:3 US:9");
  EXPECT_EQ(RecordTypeOfKey("c.u|jehiah.c41"), RecordType::kDaySubtotal);
  EXPECT_EQ(RecordTypeOfKey("c.u|jehiah.w011"), RecordType::kDaySubtotal);
  EXPECT_EQ(RecordTypeOfKey("c.u|jehiah.c41l"), RecordType::kSubtotal);
  EXPECT_EQ(RecordTypeOfKey("c.u|jehiah.w0110"), RecordType::kSubtotal);
  Result<RealtimeKey> parts = ParseArchiveKey("c.u|jehiah.w011");
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(parts->type, RecordType::kDaySubtotal);
  EXPECT_EQ(parts->ymdh, "w011");
  EXPECT_EQ(DaySubtotalArchiveKey("c", "u", "jehiah", "c41"), "c.u|jehiah.c41");
  // Day records only in the archive, only of real days, never of a counter total.
  EXPECT_FALSE(ParseRealtimeLine("c.u|jehiah.US.c41,4").ok());
  EXPECT_FALSE(ParseArchiveLine("c.u|jehiah.c2u,US:1").ok());  // 2012-02-30
  EXPECT_FALSE(ParseArchiveLine("u|jehiah.c41,US:1").ok());
}

TEST(ArchiveLine, DayUniqueRecords) {
  // eAQ: the explicit sketch of the one hash 1; eAQE: hashes 1 and 2.
  Result<ArchiveRecord> t = ParseArchiveLine("~u|jehiah.c41,eAQE");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->type, RecordType::kDayUniqueTotal);
  EXPECT_EQ(t->sketch.Estimate(), 2u);
  EXPECT_EQ(FormatArchiveLine(*t), "~u|jehiah.c41,eAQE");
  Result<ArchiveRecord> s = ParseArchiveLine("~c.u|jehiah.w011,JP:eAQ US:eAQE");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->type, RecordType::kDayUniqueSubtotal);
  ASSERT_EQ(s->columns.size(), 2u);
  EXPECT_EQ(s->columns[1].name, "US");
  EXPECT_EQ(s->columns[1].sketch.Estimate(), 2u);
  EXPECT_EQ(FormatArchiveLine(*s), "~c.u|jehiah.w011,JP:eAQ US:eAQE");
  EXPECT_EQ(RecordTypeOfKey("~u|jehiah.c41"), RecordType::kDayUniqueTotal);
  EXPECT_EQ(RecordTypeOfKey("~u|jehiah.c41l"), RecordType::kUniqueTotal);
  EXPECT_EQ(RecordTypeOfKey("~c.u|jehiah.w011"), RecordType::kDayUniqueSubtotal);
  EXPECT_EQ(RecordTypeOfKey("~c.u|jehiah.w0110"), RecordType::kUniqueSubtotal);
  EXPECT_EQ(RecordTypeOfKey("~c.u|jehiah.US.c41l"), RecordType::kUniqueSubtotal);  // realtime
  // Routed with their counters.
  EXPECT_EQ(*ShardKeyOfArchiveKey("~c.u|jehiah.c41"), "u|jehiah");
  EXPECT_EQ(*ShardKeyOfArchiveKey("~u|jehiah.c41"), "u|jehiah");
  // Never in realtime; only real days; a sketch's value, not a count.
  EXPECT_FALSE(ParseRealtimeLine("~u|jehiah.c41,eAQ").ok());
  EXPECT_FALSE(ParseRealtimeLine("~c.u|jehiah.US.c41,eAQ").ok());
  EXPECT_FALSE(ParseArchiveLine("~u|jehiah.c2u,eAQ").ok());  // 2012-02-30
  EXPECT_FALSE(ParseArchiveLine("~u|jehiah.c41,3").ok());
  EXPECT_FALSE(ParseArchiveLine("~c.u|jehiah.c41,US:3").ok());
}

TEST(ArchiveLine, Lookup) {
  Result<ArchiveRecord> r = ParseArchiveLine("l|sPo3cTK5ytM=,http://example.com/?a=1,2");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, RecordType::kLookup);
  EXPECT_EQ(r->key, "l|sPo3cTK5ytM=");
  EXPECT_EQ(r->lookup_value, "http://example.com/?a=1,2");
  EXPECT_TRUE(r->columns.empty());
  EXPECT_EQ(FormatArchiveLine(*r), "l|sPo3cTK5ytM=,http://example.com/?a=1,2");
  EXPECT_FALSE(ParseArchiveLine("l|sPo3cTK5ytM=,http://example.com/?a=1,3").ok());
}

TEST(ArchiveLine, Rejections) {
  struct Case {
    std::string_view line;
    std::string_view why;  // a word the message must contain
  };
  for (const Case& c : std::vector<Case>{
           {"u|jehiah", "','"},
           {"u|jehiah,", "no columns"},
           {"u|jehiah,c41l:5 c413:2", "out of order"},
           {"u|jehiah,c41l:5 c41l:2", "repeats"},
           {"u|jehiah,c413:2  c41l:5", "empty"},
           {"u|jehiah,c413:2 ", "empty"},
           {" u|jehiah,c413:2", "ns"},
           {"u|jehiah,c4135", "name:count"},
           {"u|jehiah,c413:", "count"},
           {"u|jehiah,c413:+2", "count"},
           {"u|jehiah,c413:2:3", "count"},
           {"u|jehiah,:2", "ymdh"},
           {"u|jehiah,c41w:2", "ymdh"},
           {"u|jehiah,c2u0:2", "ymdh"},
           {"u|jehiah,US:2", "ymdh"},
           {"u|jehiah,c413:99999999999999999999", "overflows"},
           {"u|jehiah.c41l,c413:2", "archive total key"},
           {"c.u|jehiah,US:4", "archive subtotal key"},
           {"c.u|jehiah.US.c41l,US:4", "archive subtotal key"},
           {"c.u|jehiah.c41l,U S:4", "name:count"},
           {"c.u|jehiah.c41l,U.S:4", "skey"},
           {"c.u|jehiah.c41l,123456789012:4", "skey"},
           {"c.u|jehiah.c41l,:4", "skey"},
           {"l|h0aMB8AuNw4=,wrong", "hashes to"},
           {"l|notahash,x", "lookup hash"},
       }) {
    Result<ArchiveRecord> r = ParseArchiveLine(c.line);
    ASSERT_FALSE(r.ok()) << "accepted " << c.line;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos)
        << c.line << " -> " << r.status().message();
  }
}

TEST(ArchiveLine, FormatSortsColumns) {
  ArchiveRecord r;
  r.type = RecordType::kSubtotal;
  r.key = "c.u|jehiah.c41l";
  r.columns = {{"US", 4}, {"JP", 1}};
  EXPECT_EQ(FormatArchiveLine(r), "c.u|jehiah.c41l,JP:1 US:4");
}

TEST(ArchiveKey, Parts) {
  Result<RealtimeKey> t = ParseArchiveKey("u|jehiah");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->type, RecordType::kTotal);
  EXPECT_EQ(t->ns, "u");
  EXPECT_EQ(t->tkey, "jehiah");
  EXPECT_EQ(t->ymdh, "");
  Result<RealtimeKey> s = ParseArchiveKey("c.u|jehiah.c41l");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->type, RecordType::kSubtotal);
  EXPECT_EQ(s->sns, "c");
  EXPECT_EQ(s->ymdh, "c41l");
  EXPECT_EQ(s->skey, "");
  EXPECT_FALSE(ParseArchiveKey("u|jehiah.c41l").ok());
  EXPECT_FALSE(ParseArchiveKey("c.u|jehiah.c41w").ok());
}

TEST(Keys, BuildersAndHelpers) {
  EXPECT_EQ(TotalArchiveKey("u", "jehiah"), "u|jehiah");
  EXPECT_EQ(SubtotalArchiveKey("c", "u", "jehiah", "c41l"), "c.u|jehiah.c41l");
  EXPECT_EQ(LookupKey("h0aMB8AuNw4="), "l|h0aMB8AuNw4=");
  EXPECT_EQ(LineKey("l|sPo3cTK5ytM=,http://example.com/?a=1,2"), "l|sPo3cTK5ytM=");
  EXPECT_EQ(LineKey("u|jehiah"), "u|jehiah");
  EXPECT_EQ(RecordTypeOfKey("u|jehiah"), RecordType::kTotal);
  EXPECT_EQ(RecordTypeOfKey("u|jehiah.c41l"), RecordType::kTotal);
  EXPECT_EQ(RecordTypeOfKey("c.u|jehiah.US.c41l"), RecordType::kSubtotal);
  EXPECT_EQ(RecordTypeOfKey("l|h0aMB8AuNw4="), RecordType::kLookup);
}

TEST(CompareArchiveKeys, EdgeCases) {
  // "u|a-," vs "u|a,,": '-' (0x2d) sorts after ',' (0x2c), so u|a comes first.
  EXPECT_GT(CompareArchiveKeys("u|a-", "u|a"), 0);
  EXPECT_LT(CompareArchiveKeys("u|a", "u|a-"), 0);
  // '!' (0x21) sorts before ',', so u|a! comes first although u|a is its prefix.
  EXPECT_LT(CompareArchiveKeys("u|a!", "u|a"), 0);
  EXPECT_GT(CompareArchiveKeys("u|a", "u|a!"), 0);
  EXPECT_EQ(CompareArchiveKeys("u|a", "u|a"), 0);
  EXPECT_LT(CompareArchiveKeys("u|a", "u|b"), 0);
  EXPECT_LT(CompareArchiveKeys("", "u"), 0);
  // Bytes >= 0x80 are greater than ASCII (unsigned comparison).
  EXPECT_GT(CompareArchiveKeys("u|\xc3\xa9", "u|z"), 0);
  // '.' (0x2e) after ',': a total key sorts before its own subtotal-like extensions.
  EXPECT_LT(CompareArchiveKeys("c.u|a", "c.u|a.c41l"), 0);
}

TEST(CompareArchiveKeys, MatchesWholeLineSortOrder) {
  // Random keys over an alphabet dense in the bytes around ',' and with
  // prefixes of each other; whole-line std::string order (bytewise, as
  // LC_ALL=C sort) is the oracle.
  std::mt19937 rng(7);
  const std::string alphabet = "ab!+,-./|\x7f\xc3";
  std::uniform_int_distribution<size_t> len(0, 4), ch(0, alphabet.size() - 1), val(0, 9);
  std::vector<std::string> keys;
  for (int i = 0; i < 400; ++i) {
    std::string k = "u|";
    for (size_t n = len(rng); n > 0; --n) {
      const char c = alphabet[ch(rng)];
      if (c != ',') k += c;  // keys never hold a comma
    }
    keys.push_back(k);
  }
  for (int i = 0; i < 20000; ++i) {
    const std::string& a = keys[rng() % keys.size()];
    const std::string& b = keys[rng() % keys.size()];
    const std::string la = a + "," + std::to_string(val(rng));
    const std::string lb = b + "," + std::to_string(val(rng));
    const int c = CompareArchiveKeys(a, b);
    if (a == b) {
      ASSERT_EQ(c, 0);
    } else {
      ASSERT_EQ(c < 0, la < lb) << QuoteForMessage(la) << " vs " << QuoteForMessage(lb);
      ASSERT_EQ(c, -CompareArchiveKeys(b, a));
    }
  }
}

TEST(ArchiveValueColumns, EachColumnInOrderUntilFnStops) {
  std::vector<std::pair<std::string, std::string>> seen;
  const Status st = ForEachValueColumn("c413:2 c41l:5 c41m:7", [&](std::string_view name, std::string_view value) {
    seen.emplace_back(name, value);
    return name == "c41l" ? Status::InvalidArgument("stop") : Status::Ok();
  });
  EXPECT_EQ(st.message(), "stop");
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{{"c413", "2"}, {"c41l", "5"}}));
  EXPECT_TRUE(ForEachValueColumn("", [](std::string_view, std::string_view) { return Status::InvalidArgument("x"); }).ok());
}

TEST(ArchiveKeyView, SplitsEveryTypeIntoItsParts) {
  struct Case {
    std::string key;
    RecordType type;
    std::string ns, tkey, code;
  };
  const std::vector<Case> cases = {
      {"u|jehiah", RecordType::kTotal, "u", "jehiah", ""},
      {"c.u|jehiah.c41l", RecordType::kSubtotal, "u", "jehiah", "c41l"},
      {"c.u|jehiah.c41", RecordType::kDaySubtotal, "u", "jehiah", "c41"},
      {"c.u|jehiah.c41z3", RecordType::kDaySubtotal, "u", "jehiah", "c41z3"},
      {"~u|jehiah.w0110", RecordType::kUniqueTotal, "u", "jehiah", "w0110"},
      {"~ref.clicks|h0aMB8AuNw4=.c41l", RecordType::kUniqueSubtotal, "clicks", "h0aMB8AuNw4=", "c41l"},
      {"~c.u|jehiah.c41", RecordType::kDayUniqueSubtotal, "u", "jehiah", "c41"},
  };
  for (const Case& c : cases) {
    const ArchiveKeyView view = SplitArchiveKey(c.key);
    EXPECT_EQ(view.type, c.type) << c.key;
    EXPECT_EQ(view.ns, c.ns) << c.key;
    EXPECT_EQ(view.tkey, c.tkey) << c.key;
    EXPECT_EQ(view.code, c.code) << c.key;
    EXPECT_EQ(view.ns_tkey, c.ns + "|" + c.tkey) << c.key;
  }
  const ArchiveKeyView lookup = SplitArchiveKey("l|h0aMB8AuNw4=");
  EXPECT_EQ(lookup.type, RecordType::kLookup);
  EXPECT_TRUE(lookup.ns.empty() && lookup.tkey.empty() && lookup.code.empty());
}

}  // namespace
}  // namespace clickatron

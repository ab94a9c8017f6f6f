// UniqueSketch against an independent oracle: a plain set of the tokens.
#include "clickatron/unique_sketch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace clickatron {
namespace {

std::string Token(uint64_t i) { return "visitor-" + std::to_string(i); }

UniqueSketch SketchOf(uint64_t first, uint64_t count) {
  UniqueSketch s;
  for (uint64_t i = first; i < first + count; ++i) s.Add(HashVisitor(Token(i)));
  return s;
}

TEST(HashVisitorTest, IsXxh3WithSeedZero) {
  // XXH3_64bits of the empty input, as the xxHash specification lists it:
  // sketches on disk depend on this never changing.
  EXPECT_EQ(HashVisitor(""), 0x2D06800538D394C2ull);
}

// The on-disk bytes, worked out by hand from the format in
// docs/protocols.md, so a change to varints, bit order or base64 cannot pass
// unnoticed.
TEST(UniqueSketchTest, ExplicitBytesAreVarintDeltasInBase64) {
  UniqueSketch s;
  s.Add(300);
  s.Add(1);
  // deltas 1 and 299: 0x01, then 0xAB 0x02 (299 = 0b10'0101011)
  EXPECT_EQ(s.ToBinary(), std::string("e\x01\xab\x02", 4));
  EXPECT_EQ(s.ToText(), "eAasC");  // base64 of 01 AB 02, no padding
  Result<UniqueSketch> back = UniqueSketch::FromText("eAasC");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Estimate(), 2u);
}

TEST(UniqueSketchTest, DenseBytesPackSixBitRegistersHighFirst) {
  // One register set by hand: register 5 at 10 (the hash's top 14 bits are
  // 5; of the 50 below them the first one is bit 9, so 9 zeros, plus one).
  std::string binary(1 + kDenseSketchBytes, '\0');
  binary[0] = 'd';
  binary[1 + 3] = 0x00;         // registers 4..7 live in payload bytes 3..5:
  binary[1 + 4] = char(0xA0);   // 000000 001010 000000 000000
  Result<UniqueSketch> dense = UniqueSketch::FromBinary(binary);
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  EXPECT_EQ(dense->ToBinary(), binary);
  UniqueSketch same = *dense;
  same.Add((uint64_t{5} << 50) | (uint64_t{1} << 40));  // sets register 5 to 10 again: no change
  EXPECT_EQ(same.ToBinary(), binary);
  same.Add((uint64_t{5} << 50) | (uint64_t{1} << 41));  // 8 zeros: 9 < 10, no change either
  EXPECT_EQ(same.ToBinary(), binary);
  same.Add((uint64_t{5} << 50) | (uint64_t{1} << 30));  // 19 zeros: register 5 becomes 20
  // 000000 010100 000000 000000 -> 0x01 0x40 0x00
  binary[1 + 3] = 0x01;
  binary[1 + 4] = 0x40;
  EXPECT_EQ(same.ToBinary(), binary);
}

TEST(UniqueSketchTest, ExactWhileSmallWhateverTheRepeats) {
  UniqueSketch s;
  std::unordered_set<std::string> oracle;
  for (uint64_t i = 0; i < 3000; ++i) {
    const std::string t = Token((i * 7919) % 1200);  // 1,200 distinct, most seen more than once
    s.Add(HashVisitor(t));
    oracle.insert(t);
    if (i % 97 == 0) {
      ASSERT_TRUE(s.exact()) << i;
      ASSERT_EQ(s.Estimate(), oracle.size()) << i;
    }
  }
  EXPECT_TRUE(s.exact());
  EXPECT_EQ(s.Estimate(), oracle.size());
}

TEST(UniqueSketchTest, SmallSketchesCostTensOfBytesAndTheLargestTwelveKiB) {
  EXPECT_EQ(UniqueSketch().ToText(), "e");
  EXPECT_LE(SketchOf(0, 1).ToBinary().size(), 11u);
  EXPECT_LE(SketchOf(0, 10).ToBinary().size(), 10u * 10 + 1);
  const UniqueSketch big = SketchOf(0, 100'000);
  EXPECT_FALSE(big.exact());
  EXPECT_EQ(big.ToBinary().size(), kDenseSketchBytes + 1);
  EXPECT_EQ(big.ToText().size(), kDenseSketchBytes * 4 / 3 + 1);
}

TEST(UniqueSketchTest, TurnsDenseOnlyWhenTheExplicitFormWouldBeLarger) {
  UniqueSketch s;
  uint64_t i = 0;
  std::string last_explicit;
  while (s.exact()) {
    last_explicit = s.ToBinary();
    s.Add(HashVisitor(Token(i++)));
  }
  // The last explicit form fitted in the dense size; one more visitor did not.
  EXPECT_LE(last_explicit.size(), kDenseSketchBytes + 1);
  EXPECT_GT(i, 1000u);
  EXPECT_LT(i, 2000u);
}

TEST(UniqueSketchTest, RelativeErrorWithinTwoPercentAtEveryScale) {
  for (uint64_t n : {1'500ull, 2'000ull, 5'000ull, 20'000ull, 40'000ull, 80'000ull, 300'000ull, 1'000'000ull}) {
    const UniqueSketch s = SketchOf(n * 13, n);  // distinct tokens per scale
    const double error = std::abs(static_cast<double>(s.Estimate()) - static_cast<double>(n)) / static_cast<double>(n);
    EXPECT_LE(error, 0.02) << n << " estimated " << s.Estimate();
  }
}

TEST(UniqueSketchTest, UnionIsTheSketchOfAllTokensWhateverTheOrderAndForms) {
  // Overlapping ranges in every pair of forms: explicit+explicit staying
  // explicit, explicit+explicit turning dense, explicit+dense, dense+dense;
  // and a few visitors into many (what a realtime shard does with each
  // window's), staying explicit or turning dense.
  struct Case {
    uint64_t a_first, a_count, b_first, b_count;
  };
  for (const Case& c : {Case{0, 300, 200, 400}, Case{0, 1000, 900, 1000}, Case{0, 50, 10, 50'000},
                        Case{0, 30'000, 20'000, 30'000}, Case{0, 1000, 998, 5}, Case{0, 1000, 0, 1},
                        Case{0, 1540, 1538, 20}}) {
    UniqueSketch a = SketchOf(c.a_first, c.a_count);
    UniqueSketch b = SketchOf(c.b_first, c.b_count);
    const uint64_t end = std::max(c.a_first + c.a_count, c.b_first + c.b_count);
    const UniqueSketch all = SketchOf(0, end);
    UniqueSketch ab = a;
    ab.Merge(b);
    UniqueSketch ba = b;
    ba.Merge(a);
    EXPECT_EQ(ab.ToText(), all.ToText()) << c.a_count << "+" << c.b_count;
    EXPECT_EQ(ba.ToText(), all.ToText()) << c.a_count << "+" << c.b_count;
    UniqueSketch twice = ab;
    twice.Merge(ab);  // a union with itself changes nothing
    EXPECT_EQ(twice, ab);
    Result<std::string> texts = MergeSketchTexts(a.ToText(), b.ToText());
    ASSERT_TRUE(texts.ok()) << texts.status().ToString();
    EXPECT_EQ(*texts, all.ToText());
  }
}

// EstimateUnion counts what merging the parts one by one into one sketch
// counts: checked against that sketch, and against a plain set of the
// tokens while the union is small enough to be exact.
TEST(UniqueSketchTest, EstimateUnionIsTheEstimateOfTheMergedSketch) {
  struct Range {
    uint64_t first, count;
  };
  std::vector<std::vector<Range>> families = {
      {},
      {{0, 40}},
      {{0, 50}, {12, 50}, {24, 50}, {36, 50}},       // neighbouring hours sharing visitors
      {{0, 700}, {600, 700}, {1200, 300}},           // explicit parts, the union past the dense size
      {{0, 1000}, {0, 1000}},                         // the same set twice
      {{0, 5}, {0, 20'000}, {10, 3}},                 // a dense part among explicit ones
      {{0, 20'000}, {15'000, 20'000}},                // dense with dense
      {{0, 1}, {}, {1, 1}},                           // an empty part
      {{0, 50}, {12, 50}, {24, 50}, {36, 50}, {48, 50}, {60, 50}, {72, 50}},  // an odd count of runs
      {{500, 10}, {0, 10}, {5, 10}, {1000, 1}, {0, 600}},                     // runs in no order
  };
  std::vector<Range> day;  // a day's hours as a reader unites them: 24 runs, neighbours sharing 38
  for (uint64_t hour = 0; hour < 24; ++hour) day.push_back({12 * hour, 50});
  families.push_back(day);
  for (size_t f = 0; f < families.size(); ++f) {
    std::vector<UniqueSketch> parts;
    std::set<std::string> tokens;
    for (const Range& r : families[f]) {
      parts.push_back(SketchOf(r.first, r.count));
      for (uint64_t i = r.first; i < r.first + r.count; ++i) tokens.insert(Token(i));
    }
    std::vector<const UniqueSketch*> pointers;
    UniqueSketch merged;
    for (const UniqueSketch& p : parts) {
      pointers.push_back(&p);
      merged.Merge(p);
    }
    const uint64_t estimate = UniqueSketch::EstimateUnion(pointers);
    EXPECT_EQ(estimate, merged.Estimate()) << "family " << f;
    if (merged.exact()) {
      EXPECT_EQ(estimate, tokens.size()) << "family " << f;
    }
  }
}

// A stored sketch sent as text without decoding: the same text as decoding
// and encoding it, and a form or size that cannot be is refused.
TEST(UniqueSketchTest, TextOfBinaryIsTheTextOfTheDecodedSketch) {
  for (uint64_t n : {1ull, 50ull, 1400ull, 5000ull}) {
    const UniqueSketch s = SketchOf(3, n);
    std::string text = "prefix,";
    ASSERT_TRUE(UniqueSketch::AppendTextOfBinary(s.ToBinary(), &text).ok());
    EXPECT_EQ(text, "prefix," + s.ToText()) << n;
  }
  const std::string dense = SketchOf(0, 5000).ToBinary();
  for (const std::string& bad : {std::string(), std::string("x\x01"), dense.substr(0, dense.size() - 1)}) {
    std::string out;
    EXPECT_FALSE(UniqueSketch::AppendTextOfBinary(bad, &out).ok()) << bad.size();
  }
}

TEST(UniqueSketchTest, TextAndBinaryRoundTrip) {
  for (uint64_t n : {0ull, 1ull, 7ull, 1400ull, 5000ull}) {
    const UniqueSketch s = SketchOf(5, n);
    Result<UniqueSketch> from_text = UniqueSketch::FromText(s.ToText());
    ASSERT_TRUE(from_text.ok()) << from_text.status().ToString();
    EXPECT_EQ(*from_text, s);
    Result<UniqueSketch> from_binary = UniqueSketch::FromBinary(s.ToBinary());
    ASSERT_TRUE(from_binary.ok()) << from_binary.status().ToString();
    EXPECT_EQ(*from_binary, s);
    const std::string text = s.ToText();
    EXPECT_EQ(text.find_first_of(",: .|\n"), std::string::npos);
  }
}

// Every payload length (so every base64 tail: none, 2 or 3 characters)
// decodes back, and a character outside the alphabet anywhere is refused.
TEST(UniqueSketchTest, TextOfEveryLengthRoundTripsAndABadCharacterAnywhereIsRefused) {
  std::set<size_t> tails;
  for (uint64_t n = 1; n <= 12; ++n) {
    // Hashes 1, 8, 27, …: deltas of 1, 2 and 3 varint bytes, so the payload
    // takes every length modulo 3 (random hashes are nine bytes each).
    UniqueSketch sketch;
    for (uint64_t k = 1; k <= n; ++k) sketch.Add(k * k * k * k * k);
    const std::string text = sketch.ToText();
    tails.insert((text.size() - 1) % 4);
    Result<UniqueSketch> back = UniqueSketch::FromText(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->ToText(), text);
    EXPECT_EQ(back->Estimate(), n);
    for (size_t k = 1; k < text.size(); ++k) {
      for (char bad : {'!', '=', '\n', '-', '_'}) {
        std::string broken = text;
        broken[k] = bad;
        EXPECT_FALSE(UniqueSketch::FromText(broken).ok()) << broken;
      }
    }
  }
  EXPECT_EQ(tails, (std::set<size_t>{0, 2, 3}));
}

TEST(UniqueSketchTest, RefusesMalformedSketches) {
  const std::string dense = SketchOf(0, 5000).ToBinary();
  std::string high_register = dense;
  high_register[1] = static_cast<char>(0xff);  // first register 63 > 51
  std::string descending;
  descending.push_back('e');
  descending.push_back(5);
  descending.push_back(0);  // a repeated hash (delta 0)
  const std::string bad_binary[] = {"", "x", "d", dense.substr(0, dense.size() - 3), high_register, descending,
                                    std::string("e\x80", 2),
                                    std::string("e\x81\x00", 3),  // delta 1 spelled in two bytes
                                    std::string("e\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11)};
  for (const std::string& b : bad_binary) {
    EXPECT_FALSE(UniqueSketch::FromBinary(b).ok()) << b.size();
  }
  // eAB and eAAB: base64 tails of 2 and 3 characters whose leftover bits are not zero.
  for (std::string_view t : {"", "eA", "e!!!!", "eAB=", "eAQ\n", "zAAAA", "eAB", "eAAB"}) {
    EXPECT_FALSE(UniqueSketch::FromText(t).ok()) << t;
  }
}

}  // namespace
}  // namespace clickatron

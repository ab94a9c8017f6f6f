// `clickatron sketch --records`: a visitor log ("KEY,TOKEN" lines) turned into
// bulk-load lines, one "KEY,SKETCH" per unique record key, sorted; each sketch
// compared with one built here by adding the key's tokens. Bad lines are
// refused with their line number.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "clickatron/unique_sketch.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

int RunSketch(const std::vector<std::string>& args, const std::string& input, std::string* output) {
  std::vector<std::string> argv = {clickatron::testing::BinaryPath("clickatron"), "sketch"};
  argv.insert(argv.end(), args.begin(), args.end());
  return clickatron::testing::RunCommand(argv, output, input);
}

TEST(SketchCommand, RecordsTurnAVisitorLogIntoOneLinePerKey) {
  // Keys out of order, a token repeated, a token with commas (all of it
  // after the first comma is the token), a unique subtotal key.
  const std::vector<std::pair<std::string, std::string>> log = {
      {"~u|jehiah.c41l", "alice"},          {"~c.u|jehiah.US.c41l", "alice"}, {"~u|jehiah.c41l", "bob"},
      {"~u|jehiah.c41k", "carol,from,x"},   {"~u|jehiah.c41l", "alice"},      {"~c.u|jehiah.US.c41l", "dave"},
  };
  std::string input;
  std::map<std::string, std::set<std::string>> tokens;
  for (const auto& [key, token] : log) {
    input += key + "," + token + "\n";
    tokens[key].insert(token);
  }
  std::string out;
  ASSERT_EQ(RunSketch({"--records"}, input, &out), 0) << out;
  std::string want;
  for (const auto& [key, set] : tokens) {  // std::map: sorted by key, as the tool prints
    UniqueSketch sketch;
    for (const std::string& token : set) sketch.Add(HashVisitor(token));
    want += key + "," + sketch.ToText() + "\n";
  }
  EXPECT_EQ(out, want);
}

TEST(SketchCommand, RecordsRefuseLinesThatAreNotUniqueKeysWithAToken) {
  std::string out;
  EXPECT_NE(RunSketch({"--records"}, "~u|jehiah.c41l,alice\nu|jehiah.c41l,bob\n", &out), 0);
  EXPECT_NE(out.find("line 2"), std::string::npos) << out;
  EXPECT_NE(out.find("unique record"), std::string::npos) << out;
  EXPECT_NE(RunSketch({"--records"}, "~u|jehiah.c41l\n", &out), 0) << "no token";
  EXPECT_NE(RunSketch({"--records"}, "~u|jehiah.c2u0,alice\n", &out), 0) << "no such hour (Feb 30)";
  EXPECT_NE(RunSketch({"--records", "--estimate"}, "~u|jehiah.c41l,alice\n", &out), 0);
  EXPECT_NE(RunSketch({"--records"}, "~u|jehiah.c41l,\n", &out), 0) << "an empty token, as /incr refuses uniq=";
  EXPECT_NE(out.find("no visitor"), std::string::npos) << out;
}

// A visitor log written on Windows: "alice\r\n" is alice, as /incr reads
// CRLF batch lines, not a second visitor.
TEST(SketchCommand, RecordsReadCrlfLinesAsTheirTokens) {
  std::string crlf, lf;
  ASSERT_EQ(RunSketch({"--records"}, "~u|jehiah.c41l,alice\r\n~u|jehiah.c41l,bob\r\n", &crlf), 0) << crlf;
  ASSERT_EQ(RunSketch({"--records"}, "~u|jehiah.c41l,alice\n~u|jehiah.c41l,bob\n", &lf), 0) << lf;
  EXPECT_EQ(crlf, lf);
}

}  // namespace
}  // namespace clickatron
